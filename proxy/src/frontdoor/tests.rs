//! The front door against real parts, in-process: a proxy engine on ports
//! of 127.0.0.1 in front of a real broker (tansu, node id 111), reloaded
//! from a version that works to one that breaks its clients, checked before
//! and after as the analysis does.

use std::sync::Arc;
use std::time::Duration;

use sluice_admin_api::analysis::{DoorStep, Finding, FrontDoor};
use sluice_testkit::certs::Ca;
use sluice_tests::peers::{TANSU_NODE_ID, Tansu};
use tokio::net::TcpListener;

use super::{Door, check, compare};
use crate::config::{MemoryFiles, validate};
use crate::engine::{Engine, ReloadOutcome};
use crate::metrics::Metrics;

const TIMEOUT: Duration = Duration::from_secs(5);

/// A bootstrap port whose broker port (the next one) is free too.
fn free_ports() -> u16 {
    sluice_testkit::ports::ports(2)
}

/// Cluster `orders` in front of `upstream`: bootstrap on `port`, node
/// `first` on the next port, told `advertised`, with more gateway YAML.
fn config(upstream: &str, port: u16, advertised: &str, first: i32, more: &str) -> String {
    format!(
        "virtualClusters:
  - name: orders
    upstream: {{ bootstrapServers: [\"{upstream}\"] }}
    gateway:
      listenHost: 127.0.0.1
      advertisedHost: {advertised}
      bootstrapPort: {port}
      brokerPorts: {{ start: {}, count: 1, firstNodeId: {first} }}
{more}",
        port + 1
    )
}

fn start(text: &str, files: &MemoryFiles) -> Arc<Engine> {
    let valid = validate(text.as_bytes(), files).unwrap_or_else(|e| panic!("{e:?}"));
    Engine::start(valid, Arc::new(Metrics::new()), Arc::new(files.clone())).unwrap()
}

fn reload(engine: &Arc<Engine>, text: &str) {
    let outcome = engine.reload(text.as_bytes(), None);
    assert!(
        matches!(outcome, ReloadOutcome::Applied { .. }),
        "{outcome:?}"
    );
}

/// The front door of the version in force, with this CA file.
async fn door_check(engine: &Engine, ca: Option<&[u8]>) -> FrontDoor {
    let config = engine.config();
    let door = Door::of(&config.config.virtual_clusters[0], ca, TIMEOUT).unwrap();
    assert_eq!(door.cluster(), "orders");
    check(&door).await
}

fn names(door: &FrontDoor) -> Vec<(&str, bool)> {
    door.steps.iter().map(|s| (s.step.as_str(), s.ok)).collect()
}

const ALL_OK: [(&str, bool); 3] = [("bootstrap", true), ("metadata", true), ("brokers", true)];

fn finding(step: &str, before: String, after: String) -> Finding {
    Finding {
        cluster: "orders".to_owned(),
        step: step.to_owned(),
        before,
        after,
    }
}

#[tokio::test]
async fn a_good_gateway_passes_and_an_advertised_host_where_nothing_listens_fails_bootstrap() {
    let tansu = Tansu::start();
    let port = free_ports();
    let files = MemoryFiles::default();
    // `localhost` is resolved as a client resolves it.
    let engine = start(
        &config(&tansu.addr, port, "localhost", TANSU_NODE_ID, ""),
        &files,
    );
    let before = door_check(&engine, None).await;
    assert_eq!(names(&before), ALL_OK, "{before:?}");
    let broker = format!("localhost:{}", port + 1);
    assert_eq!(
        before.steps[1].advertised,
        [format!("node {TANSU_NODE_ID} at {broker}")]
    );
    assert_eq!(before.steps[2].address, broker);

    // Nothing listens on 127.0.0.2 (the listeners bind 127.0.0.1).
    reload(
        &engine,
        &config(&tansu.addr, port, "127.0.0.2", TANSU_NODE_ID, ""),
    );
    let after = door_check(&engine, None).await;
    assert_eq!(
        after.steps,
        [DoorStep {
            step: "bootstrap".to_owned(),
            address: format!("127.0.0.2:{port}"),
            ok: false,
            error: Some("connection refused".to_owned()),
            advertised: vec![],
        }],
        "a step after a failed one does not run"
    );
    let (findings, notes) = compare("orders", Some(&before), &after);
    assert_eq!(
        findings,
        [finding(
            "bootstrap",
            format!("localhost:{port} answered ApiVersions"),
            format!("127.0.0.2:{port}: connection refused"),
        )]
    );
    assert!(notes.is_empty(), "{notes:?}");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_first_node_id_that_maps_no_port_advertises_no_broker() {
    let tansu = Tansu::start();
    let port = free_ports();
    let files = MemoryFiles::default();
    let good = config(&tansu.addr, port, "127.0.0.1", TANSU_NODE_ID, "");
    let engine = start(&good, &files);
    let before = door_check(&engine, None).await;
    assert_eq!(names(&before), ALL_OK, "{before:?}");

    reload(&engine, &config(&tansu.addr, port, "127.0.0.1", 1, ""));
    let after = door_check(&engine, None).await;
    assert_eq!(
        names(&after),
        [("bootstrap", true), ("metadata", false)],
        "{after:?}"
    );
    let (findings, _) = compare("orders", Some(&before), &after);
    assert_eq!(
        findings,
        [finding(
            "metadata",
            format!(
                "127.0.0.1:{port} advertised node {TANSU_NODE_ID} at 127.0.0.1:{}",
                port + 1
            ),
            format!("127.0.0.1:{port}: Metadata advertises no broker"),
        )]
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn a_certificate_without_the_advertised_name_fails_bootstrap_with_the_rustls_reason() {
    let tansu = Tansu::start();
    let port = free_ports();
    let ca = Ca::new("gateway CA");
    let named = ca.server("gateway", 1);
    let other = ca.sign(&["other.test"], "other", Some(2));
    // The good chain ends with the CA: without a CA file, it is the root.
    let files = MemoryFiles::default()
        .with("good.crt", format!("{}{}", named.cert, ca.pem))
        .with("good.key", named.key.as_bytes())
        .with("other.crt", format!("{}{}", other.cert, ca.pem))
        .with("other.key", other.key.as_bytes());
    let tls = |pair: &str| format!("      tls: {{ certFile: {pair}.crt, keyFile: {pair}.key }}\n");
    let engine = start(
        &config(&tansu.addr, port, "127.0.0.1", TANSU_NODE_ID, &tls("good")),
        &files,
    );
    let before = door_check(&engine, None).await;
    assert_eq!(names(&before), ALL_OK, "{before:?}");
    let with_ca = door_check(&engine, Some(ca.pem.as_bytes())).await;
    assert_eq!(names(&with_ca), ALL_OK, "{with_ca:?}");
    let stranger = Ca::new("another CA");
    let untrusted = door_check(&engine, Some(stranger.pem.as_bytes())).await;
    let error = untrusted.steps[0].error.as_deref().unwrap_or_default();
    assert!(error.contains("UnknownIssuer"), "{untrusted:?}");

    reload(
        &engine,
        &config(&tansu.addr, port, "127.0.0.1", TANSU_NODE_ID, &tls("other")),
    );
    let after = door_check(&engine, Some(ca.pem.as_bytes())).await;
    assert_eq!(names(&after), [("bootstrap", false)], "{after:?}");
    let error = after.steps[0].error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with(
            "TLS handshake failed: invalid peer certificate: certificate not valid for name"
        ),
        "{error}"
    );
    assert!(error.contains("127.0.0.1"), "{error}");
    let (findings, _) = compare("orders", Some(&before), &after);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].step, "bootstrap");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_gateway_that_never_answers_fails_within_the_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts and holds every connection, answering nothing.
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            open.push(tcp);
        }
    });
    let text = config("127.0.0.1:9", port, "127.0.0.1", 0, "");
    let valid = validate(text.as_bytes(), &MemoryFiles::default()).unwrap();
    let timeout = Duration::from_millis(300);
    let door = Door::of(&valid.config.virtual_clusters[0], None, timeout).unwrap();
    let door = check(&door).await;
    assert_eq!(
        door.steps[0].error.as_deref(),
        Some("no answer within 300ms")
    );
    held.abort();
}

#[test]
fn a_ca_file_without_a_certificate_is_refused() {
    let text = config("127.0.0.1:9", 19092, "127.0.0.1", 0, "");
    let leaf = Ca::new("gateway CA").server("gateway", 1);
    let files = MemoryFiles::default()
        .with("g.crt", leaf.cert.as_bytes())
        .with("g.key", leaf.key.as_bytes());
    let text = format!("{text}      tls: {{ certFile: g.crt, keyFile: g.key }}\n");
    let valid = validate(text.as_bytes(), &files).unwrap();
    let e = Door::of(&valid.config.virtual_clusters[0], Some(b"nothing"), TIMEOUT)
        .expect_err("no certificate");
    assert_eq!(
        e.to_string(),
        "virtual cluster orders: front door CA file: no certificate in it"
    );
}

#[tokio::test]
async fn sni_routing_bootstraps_on_the_bootstrap_host_with_it_as_the_server_name() {
    let tansu = Tansu::start();
    let port = sluice_testkit::ports::port();
    let ca = Ca::new("sni CA");
    let leaf = ca.sign(&["localhost", "broker-111.localhost"], "sni", Some(1));
    let files = MemoryFiles::default()
        .with("sni.crt", leaf.cert.as_bytes())
        .with("sni.key", leaf.key.as_bytes());
    let text = format!(
        "virtualClusters:
  - name: orders
    upstream: {{ bootstrapServers: [\"{}\"] }}
    gateway:
      listenHost: 127.0.0.1
      sni: {{ port: {port}, bootstrapHost: localhost, brokerHostPattern: \"broker-$(nodeId).localhost\" }}
      tls: {{ certFile: sni.crt, keyFile: sni.key }}
",
        tansu.addr
    );
    let engine = start(&text, &files);
    // The chain is the leaf only: the CA file is the trust.
    let door = door_check(&engine, Some(ca.pem.as_bytes())).await;
    let broker = format!("broker-{TANSU_NODE_ID}.localhost:{port}");
    assert_eq!(
        names(&door)[..2],
        [("bootstrap", true), ("metadata", true)],
        "{door:?}"
    );
    assert_eq!(door.steps[0].address, format!("localhost:{port}"));
    assert_eq!(
        door.steps[1].advertised,
        [format!("node {TANSU_NODE_ID} at {broker}")]
    );
    // Whether `*.localhost` resolves depends on the host's resolver; either
    // way the step names the broker it tried.
    let brokers = &door.steps[2];
    assert_eq!(brokers.address, broker);
    if let Some(error) = &brokers.error {
        assert!(
            error.starts_with(&format!("node {TANSU_NODE_ID} at {broker}: connect: ")),
            "{error}"
        );
    }
    engine.shutdown().await;
}
