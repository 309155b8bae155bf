//! `decide` on requests built as the API server sends them.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionReview};
use serde_json::{Value, json};
use sluice_config::{MemoryFiles, PathsOnly};

use super::*;

const ORDERS: &str = "virtualClusters:
  - name: orders
    upstream: { bootstrapServers: [kafka-0:9092] }
    gateway: { advertisedHost: orders.svc, bootstrapPort: 19092, brokerPorts: { start: 19093, count: 3 } }
";

const TWO_ERRORS: &str = "drainTimeout: soon
virtualClusters:
  - name: Orders
    upstream: { bootstrapServers: [kafka-0:9092] }
    gateway: { advertisedHost: orders.svc, bootstrapPort: 19092, brokerPorts: { start: 19093, count: 3 } }
";

fn policy() -> Policy {
    Policy::new("proxy.yaml", 20, Arc::new(PathsOnly))
}

fn config_map(data: Value) -> Value {
    let mut object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "proxy-config",
            "namespace": "kafka",
            "labels": { "sluice.dev/proxy-config": "true" }
        }
    });
    if let (Some(o), Some(d)) = (object.as_object_mut(), data.as_object()) {
        o.extend(d.clone());
    }
    object
}

fn text(yaml: &str) -> Value {
    config_map(json!({ "data": { "proxy.yaml": yaml } }))
}

fn request(
    kind: &str,
    operation: &str,
    object: Value,
    old: Value,
) -> AdmissionRequest<DynamicObject> {
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": { "group": "", "version": "v1", "kind": kind },
            "resource": { "group": "", "version": "v1", "resource": "configmaps" },
            "name": "proxy-config",
            "namespace": "kafka",
            "operation": operation,
            "userInfo": { "username": "admin" },
            "object": object,
            "oldObject": old,
            "dryRun": false
        }
    });
    let review: AdmissionReview<DynamicObject> = serde_json::from_value(review).expect("a review");
    review.try_into().expect("has a request")
}

fn create(object: Value) -> Decision {
    decide(
        &request("ConfigMap", "CREATE", object, Value::Null),
        &policy(),
    )
}

fn denial_of(d: Decision) -> String {
    match d {
        Decision::Denied { message } => message,
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[test]
fn a_valid_configuration_is_allowed() {
    assert_eq!(create(text(ORDERS)), Decision::Allowed { warnings: vec![] });
}

#[test]
fn every_error_is_listed_with_its_position() {
    let message = denial_of(create(text(TWO_ERRORS)));
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(
        lines,
        [
            "proxy.yaml in ConfigMap kafka/proxy-config is not a valid proxy configuration (2 errors):",
            "proxy.yaml:1:15: drainTimeout: \"soon\" is not a duration: write a whole number and a unit, ms, s, m or h (e.g. 30s)",
            "proxy.yaml:3:11: virtualClusters[0].name: \"Orders\" is not a valid name: use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit",
        ]
    );
}

#[test]
fn errors_without_a_position_read_like_the_cli() {
    let message = denial_of(create(text("")));
    assert!(
        message.ends_with("\nproxy.yaml: file is empty"),
        "{message}"
    );
}

#[test]
fn the_list_is_capped_with_a_count_of_the_rest() {
    let mut p = policy();
    p.max_errors = 1;
    let d = decide(
        &request("ConfigMap", "CREATE", text(TWO_ERRORS), Value::Null),
        &p,
    );
    let message = denial_of(d);
    assert_eq!(message.lines().count(), 3, "{message}");
    assert!(message.ends_with("\nand 1 more error"), "{message}");
    p.max_errors = 0;
    let d = decide(
        &request("ConfigMap", "CREATE", text(TWO_ERRORS), Value::Null),
        &p,
    );
    assert_eq!(denial_of(d).lines().count(), 3);
}

#[test]
fn a_config_map_without_the_key_is_denied_saying_so() {
    let message = denial_of(create(config_map(
        json!({ "data": { "other.yaml": ORDERS } }),
    )));
    assert!(
        message.starts_with(
            "ConfigMap kafka/proxy-config has no key \"proxy.yaml\" in data or binaryData"
        ),
        "{message}"
    );
    let message = denial_of(create(config_map(json!({}))));
    assert!(message.contains("has no key \"proxy.yaml\""), "{message}");
}

#[test]
fn the_key_is_configurable() {
    let mut p = policy();
    p.config_key = "sluice.yaml".into();
    let object = config_map(json!({ "data": { "sluice.yaml": TWO_ERRORS } }));
    let d = decide(&request("ConfigMap", "CREATE", object, Value::Null), &p);
    let message = denial_of(d);
    assert!(
        message.contains("\nsluice.yaml:1:15: drainTimeout:"),
        "{message}"
    );
}

#[test]
fn binary_data_is_decoded() {
    let ok = config_map(json!({ "binaryData": { "proxy.yaml": STANDARD.encode(ORDERS) } }));
    assert_eq!(create(ok), Decision::Allowed { warnings: vec![] });
    let latin1 = config_map(
        json!({ "binaryData": { "proxy.yaml": STANDARD.encode(b"drainTimeout: caf\xe9\n") } }),
    );
    let message = denial_of(create(latin1));
    assert!(
        message.contains("\nproxy.yaml:1:18: file is not valid UTF-8"),
        "{message}"
    );
    let garbage = config_map(json!({ "binaryData": { "proxy.yaml": "%%%" } }));
    let message = denial_of(create(garbage));
    assert!(
        message.contains("binaryData.proxy.yaml is not valid base64"),
        "{message}"
    );
    let number = config_map(json!({ "data": { "proxy.yaml": 7 } }));
    assert!(denial_of(create(number)).contains("data.proxy.yaml is not a string"));
}

#[test]
fn other_kinds_delete_and_connect_are_not_checked() {
    let broken = text(TWO_ERRORS);
    let p = policy();
    let secret = request("Secret", "CREATE", broken.clone(), Value::Null);
    assert_eq!(decide(&secret, &p), Decision::Skipped(Skip::OtherKind));
    for op in ["DELETE", "CONNECT"] {
        let r = request("ConfigMap", op, Value::Null, broken.clone());
        assert_eq!(decide(&r, &p), Decision::Skipped(Skip::Operation), "{op}");
    }
}

#[test]
fn dry_run_is_judged_the_same() {
    let mut r = request("ConfigMap", "CREATE", text(TWO_ERRORS), Value::Null);
    let real = decide(&r, &policy());
    r.dry_run = true;
    assert_eq!(decide(&r, &policy()), real);
}

#[test]
fn updates_warn_what_a_reload_will_do() {
    let new = format!(
        "{}{}",
        ORDERS.replace("kafka-0:9092", "kafka-1:9092"),
        "  - name: payments
    upstream: { bootstrapServers: [kafka-0:9092] }
    gateway: { advertisedHost: payments.svc, bootstrapPort: 29092, brokerPorts: { start: 29093, count: 3 } }
"
    );
    let r = request("ConfigMap", "UPDATE", text(&new), text(ORDERS));
    assert_eq!(
        decide(&r, &policy()),
        Decision::Allowed {
            warnings: vec![
                "cluster \"orders\" will drain and restart: upstream.bootstrapServers changed"
                    .into(),
                "cluster \"payments\" will be added".into(),
            ]
        }
    );
    let back = request("ConfigMap", "UPDATE", text(ORDERS), text(&new));
    let Decision::Allowed { warnings } = decide(&back, &policy()) else {
        panic!("allowed");
    };
    assert_eq!(
        warnings[1],
        "cluster \"payments\" will be removed: its connections drain and close"
    );
}

#[test]
fn a_change_that_applies_in_place_says_so() {
    let new = format!("{ORDERS}    limits: {{ maxConnections: 5 }}\n");
    let r = request("ConfigMap", "UPDATE", text(&new), text(ORDERS));
    assert_eq!(
        decide(&r, &policy()),
        Decision::Allowed {
            warnings: vec![
                "cluster \"orders\" applies in place, no drain: limits.maxConnections changed from 10000 to 5"
                    .into(),
            ]
        }
    );
}

#[test]
fn an_invalid_or_missing_old_configuration_gives_no_warnings() {
    for old in [text(TWO_ERRORS), config_map(json!({}))] {
        let r = request("ConfigMap", "UPDATE", text(ORDERS), old);
        assert_eq!(
            decide(&r, &policy()),
            Decision::Allowed { warnings: vec![] }
        );
    }
    let r = request("ConfigMap", "UPDATE", text(TWO_ERRORS), text(ORDERS));
    assert!(matches!(decide(&r, &policy()), Decision::Denied { .. }));
}

#[test]
fn warnings_are_few_and_short() {
    let cluster = |i: usize, host: &str| {
        format!(
            "  - name: cluster-with-a-rather-long-name-number-{i:02}
    upstream: {{ bootstrapServers: [{host}-a-very-long-upstream-host-name.example.com:9092] }}
    gateway: {{ advertisedHost: c{i}.svc, bootstrapPort: {}, brokerPorts: {{ start: {}, count: 3 }} }}
",
            20_000 + i * 10,
            20_001 + i * 10
        )
    };
    let old: String = std::iter::once("virtualClusters:\n".to_owned())
        .chain((0..8).map(|i| cluster(i, "old")))
        .collect();
    let new: String = std::iter::once("virtualClusters:\n".to_owned())
        .chain((0..8).map(|i| cluster(i, "new")))
        .collect();
    let r = request("ConfigMap", "UPDATE", text(&new), text(&old));
    let Decision::Allowed { warnings } = decide(&r, &policy()) else {
        panic!("allowed");
    };
    assert_eq!(warnings.len(), MAX_WARNINGS);
    assert!(
        warnings
            .iter()
            .all(|w| w.chars().count() <= MAX_WARNING_CHARS),
        "{warnings:#?}"
    );
    assert_eq!(
        warnings[4],
        "and 4 more changes: run `sluice-proxy diff` on the two versions for all"
    );
}

#[test]
fn files_are_read_only_through_the_policy() {
    let tls = "admin: { listen: 0.0.0.0:9190, tokenFile: /var/run/sluice/token }
virtualClusters:
  - name: orders
    upstream: { bootstrapServers: [kafka-0:9092] }
    gateway: { advertisedHost: orders.svc, bootstrapPort: 19092, brokerPorts: { start: 19093, count: 3 } }
";
    assert_eq!(create(text(tls)), Decision::Allowed { warnings: vec![] });
    let mut p = policy();
    p.files = Arc::new(MemoryFiles::default());
    let d = decide(&request("ConfigMap", "CREATE", text(tls), Value::Null), &p);
    assert!(denial_of(d).contains("admin.tokenFile"));
}

#[test]
fn lines_are_capped() {
    let long = format!("startupPolicy: {}\n", "x".repeat(5000));
    let message = denial_of(create(text(&long)));
    let line = message.lines().nth(2).expect("the startupPolicy line");
    assert_eq!(line.chars().count(), MAX_LINE_CHARS);
    assert!(line.ends_with('…'));
}

/// An UPDATE's old object admitted lately by this replica is taken from the
/// recent configurations, not validated again; the warnings are the ones a
/// fresh replica gives.
#[test]
fn an_old_object_admitted_lately_is_not_validated_again() {
    let new = ORDERS.replace("kafka-0:9092", "kafka-1:9092");
    let update = request("ConfigMap", "UPDATE", text(&new), text(ORDERS));
    let warm = policy();
    assert_eq!(
        create(text(ORDERS)),
        decide(
            &request("ConfigMap", "CREATE", text(ORDERS), Value::Null),
            &warm
        )
    );
    assert_eq!(warm.recent.len(), 1);
    assert_eq!(decide(&update, &warm), decide(&update, &policy()));
    assert_eq!(warm.recent.len(), 2, "the new configuration is kept too");

    // Proof that the old object is looked up: a planted entry under its
    // version (holding the new configuration) leaves nothing to warn about.
    let planted = policy();
    let mut fake = validate(new.as_bytes(), &PathsOnly).unwrap();
    fake.version = sluice_config::config_version(ORDERS.as_bytes());
    planted.recent.put(&fake);
    assert_eq!(
        decide(&update, &planted),
        Decision::Allowed { warnings: vec![] }
    );
    assert_ne!(
        decide(&update, &policy()),
        Decision::Allowed { warnings: vec![] }
    );
}

#[test]
fn recent_configurations_are_few_and_only_kept_when_files_are_not_read() {
    let p = policy();
    for port in 0..6 {
        let yaml = ORDERS.replace("19092", &(20_000 + port * 10).to_string());
        let d = decide(
            &request("ConfigMap", "CREATE", text(&yaml), Value::Null),
            &p,
        );
        assert_eq!(d, Decision::Allowed { warnings: vec![] });
    }
    assert_eq!(p.recent.len(), 4);

    let mut reading = policy();
    reading.files = Arc::new(MemoryFiles::default());
    let d = decide(
        &request("ConfigMap", "CREATE", text(ORDERS), Value::Null),
        &reading,
    );
    assert_eq!(d, Decision::Allowed { warnings: vec![] });
    assert!(
        reading.recent.is_empty(),
        "a verdict that read files is not kept"
    );
}

mod sasl;
mod tenancy;
