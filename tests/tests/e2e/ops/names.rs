//! Every metric name the shipped rules and dashboard read is in the real
//! `/metrics` of the proxy, the watcher or the webhook (a histogram's
//! `_bucket`, `_sum` and `_count`, a counter's `_total`), once each has done
//! what makes its labelled families appear.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::Command;
use std::time::Duration;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, DeleteTopicsRequest, DeleteTopicsResponse, MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use serde_json::Value;
use sluice_testkit::certs::Ca;
use sluice_testkit::http::get;
use sluice_testkit::ports::ports;
use sluice_testkit::process::Proc;
use sluice_testkit::proxy::Proxy;
use sluice_testkit::volume::Volume;
use sluice_testkit::watcher::Watcher;
use sluice_testkit::{bin, repo};
use sluice_tests::config::{listed_times, tansu_cluster, with_drain};
use sluice_tests::kafka::Conn;
use sluice_tests::peers::Tansu;
use sluice_tests::prometheus::{alerting_rules, dashboard_file, output, rules, webhook};
use sluice_tests::promql::{metric_names, offered};

const DENY: &str = "    filters:\n      - type: deny-apis\n        config: { apis: [DeleteTopics] }\n      - type: quota\n        config: { produceBytesPerSecond: 1073741824 }\n      - type: topic-policy\n        config: { default: allow, rules: [{ deny: [describe], topics: [hidden] }] }\n";
/// A quota no test traffic reaches: its usage gauge is exported.
const QUOTA: &str =
    "    filters:\n      - type: quota\n        config: { produceBytesPerSecond: 1073741824 }\n";

/// A webhook on 127.0.0.1 (its metrics on plain HTTP) that has answered
/// one AdmissionReview; returns it and its metrics address.
fn webhook_that_answered(dir: &std::path::Path) -> (Proc, String) {
    let port = ports(2);
    let (listen, metrics) = (
        format!("127.0.0.1:{port}"),
        format!("127.0.0.1:{}", port + 1),
    );
    let pair = Ca::new("names test CA")
        .server("sluice-webhook", 1)
        .write(dir, "tls.crt", "tls.key");
    let webhook = webhook(Command::new(bin("sluice-webhook")), &listen, &metrics, pair);
    let review = repo().join("tests/fixtures/admission/valid-create.json");
    let out = Command::new("curl")
        .args(["-sSk", "--fail", "-H", "content-type: application/json"])
        .arg("--data-binary")
        .arg(format!("@{}", review.display()))
        .arg(format!("https://{listen}/validate"))
        .output()
        .expect("curl");
    assert!(out.status.success(), "{}", output(&out));
    (webhook, metrics)
}

/// A second cluster whose gateway serves TLS (its certificate's expiry is a
/// gauge); its upstream is never reached.
fn tls_cluster(dir: &std::path::Path, port: u16) -> String {
    let (cert, key) = Ca::new("names test gateway CA").server("gateway", 2).write(
        dir,
        "gateway.crt",
        "gateway.key",
    );
    format!(
        "  - name: tls\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"], checkOnReload: false }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }}, tls: {{ certFile: {}, keyFile: {} }} }}\n",
        port + 1,
        cert.display(),
        key.display()
    )
}

/// The `/metrics` text of a real proxy (in front of tansu), its watcher (in
/// fleet mode) and a webhook, after each did what makes its labelled
/// families appear: requests, a denied one, a protocol error, a drain
/// after a reload through the watcher, an admission, a topic policy's
/// denial.
pub(super) fn scrape_every_program() -> Vec<String> {
    let tansu = Tansu::start();
    let port = ports(4);
    let dir = tempfile::tempdir().expect("temp dir");
    let tls = tls_cluster(dir.path(), port + 2);
    let config = |filters: &str| {
        with_drain(
            "2s",
            &[
                tansu_cluster("ops", &tansu.addr, port, filters),
                tls.clone(),
            ],
        )
    };
    let proxy = Proxy::start(&config(DENY));
    let mut volume = Volume::create(
        dir.path(),
        "proxy.yaml",
        proxy.render(&config(DENY)).as_bytes(),
    );
    let peers = format!("http://{}", proxy.admin);
    let gate = [
        "--peers",
        &peers,
        "--canary-soak",
        "0s",
        "--stagger",
        "0s",
        "--jitter",
        "0s",
    ];
    let watcher = Watcher::start(&volume.path(), &proxy.admin, &gate);

    let bootstrap = format!("127.0.0.1:{port}");
    let mut held = Conn::connect(&bootstrap);
    let mut metadata = MetadataRequest::default();
    metadata.topics = None;
    let _: MetadataResponse = held.call(ApiKey::Metadata, 9, &metadata);
    // A topic the policy hides, asked by name: a policy denial.
    let mut hidden = MetadataRequestTopic::default();
    hidden.name = Some(TopicName(StrBytes::from_static_str("hidden")));
    metadata.topics = Some(vec![hidden]);
    let refused: MetadataResponse = held.call(ApiKey::Metadata, 9, &metadata);
    assert_eq!(refused.topics[0].error_code, 29, "{refused:?}");
    let denied: DeleteTopicsResponse =
        held.call(ApiKey::DeleteTopics, 4, &DeleteTopicsRequest::default());
    assert_eq!(denied.throttle_time_ms, 0);
    let mut hostile = Conn::connect(&bootstrap);
    hostile
        .stream
        .write_all(&[0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4])
        .expect("write");
    assert!(hostile.closed_within(Duration::from_secs(5)));
    // A modified cluster (its upstream): the held connection's generation
    // drains.
    let next = proxy.render(&with_drain(
        "2s",
        &[
            listed_times(
                &tansu_cluster("ops", &tansu.addr, port, QUOTA),
                &tansu.addr,
                2,
            ),
            tls.clone(),
        ],
    ));
    volume.swap(next.as_bytes());
    proxy.wait_for_version(
        &sluice_testkit::config::version(&next),
        Duration::from_secs(30),
    );
    proxy.wait_for_metric(
        "sluice_drained_connections_total{cluster=\"ops\",result=\"clean\"}",
        1.0,
        Duration::from_secs(10),
    );

    let (_webhook, webhook_metrics) = webhook_that_answered(dir.path());
    [
        get(&proxy.admin, "/metrics"),
        get(&watcher.http, "/metrics"),
        get(&webhook_metrics, "/metrics"),
    ]
    .into_iter()
    .map(|r| {
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    })
    .collect()
}

/// Every PromQL expression of the dashboard: its panels' targets and its
/// variables' `label_values(metric, label)` queries.
fn dashboard_exprs() -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    match (k.as_str(), x.as_str()) {
                        ("expr", Some(e)) => out.push(e.to_owned()),
                        ("definition", Some(d)) => out.push(
                            d.trim_start_matches("label_values(")
                                .split(',')
                                .next()
                                .unwrap_or_default()
                                .to_owned(),
                        ),
                        _ => walk(x, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let text = std::fs::read_to_string(dashboard_file()).expect("dashboard");
    let mut out = Vec::new();
    walk(
        &serde_json::from_str(&text).expect("dashboard JSON"),
        &mut out,
    );
    out
}

#[test]
fn every_metric_the_rules_and_the_dashboard_read_is_exported() {
    let texts = scrape_every_program();
    let exported = offered(&texts);
    let mut used: BTreeMap<String, String> = BTreeMap::new();
    let rule_exprs = alerting_rules(&rules())
        .iter()
        .map(|r| {
            (
                r["alert"].as_str().unwrap().to_owned(),
                r["expr"].as_str().unwrap().to_owned(),
            )
        })
        .collect::<Vec<_>>();
    let panel_exprs = dashboard_exprs()
        .into_iter()
        .map(|e| ("dashboard".to_owned(), e));
    for (place, expr) in rule_exprs.into_iter().chain(panel_exprs) {
        let names = metric_names(&expr);
        assert!(!names.is_empty(), "{place}: no metric in {expr}");
        for name in names {
            used.entry(name).or_insert(place.clone());
        }
    }
    assert!(used.len() > 25, "the dashboard and rules read {used:?}");
    let missing: BTreeSet<&str> = used
        .keys()
        .map(String::as_str)
        .filter(|n| !exported.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "read but not exported: {missing:?} (where: {used:?}); exported: {exported:?}"
    );
}

#[test]
fn the_dashboard_shows_rollouts_reloads_drains_traffic_memory_and_certificates() {
    let read: BTreeSet<String> = dashboard_exprs()
        .iter()
        .flat_map(|e| metric_names(e))
        .collect();
    for needed in [
        "sluice_config_info",
        "sluice_watcher_rollout_halted",
        "sluice_watcher_slot",
        "sluice_watcher_analysis_info",
        "sluice_watcher_analyses_total",
        "sluice_config_reload_total",
        "sluice_watcher_reloads_total",
        "sluice_drained_connections_total",
        "sluice_connections_active",
        "sluice_bytes_total",
        "sluice_buffered_bytes",
        "sluice_max_buffered_bytes",
        "sluice_tls_certificate_expiry_timestamp_seconds",
        "sluice_webhook_certificate_expiry_timestamp_seconds",
    ] {
        assert!(
            read.contains(needed),
            "the dashboard does not show {needed}"
        );
    }
    let text = std::fs::read_to_string(dashboard_file()).expect("dashboard");
    let dashboard: Value = serde_json::from_str(&text).expect("JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    let ids: BTreeSet<u64> = panels.iter().filter_map(|p| p["id"].as_u64()).collect();
    assert_eq!(ids.len(), panels.len(), "every panel has its own id");
    for p in panels.iter().filter(|p| p["type"] != "row") {
        let targets = p["targets"].as_array().map_or(0, Vec::len);
        assert!(targets > 0, "panel {} has no query", p["title"]);
    }
}

#[test]
fn metric_names_are_read_out_of_promql_and_nothing_else() {
    let expr = "histogram_quantile(0.99, sum by (le, cluster) (rate(sluice_a_bucket{x=\"}y\", \
                z=~'$v'}[$__rate_interval]))) / on (instance) group_left (version) \
                topk by (namespace) (1, sluice_b offset 5m) > 1e3 unless bool sluice_c:rate5m";
    let names: Vec<String> = metric_names(expr).into_iter().collect();
    assert_eq!(names, ["sluice_a_bucket", "sluice_b", "sluice_c:rate5m"]);
}
