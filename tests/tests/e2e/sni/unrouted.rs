//! Connections the shared SNI port cannot route: a server name no cluster
//! has, a ClientHello without one, and a client speaking plaintext Kafka.
//! Each closes alone, logged and counted, while a steady TLS client on the
//! same port never notices.

use std::process::{Command, Stdio};
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, ApiVersionsRequest};
use sluice_testkit::ports::port;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::with_drain;
use sluice_tests::kafka::Conn;
use sluice_tests::peers::Tansu;
use sluice_tests::python::Steady;

use super::{certificates, cluster, hosts};

const UNKNOWN: &str = "sluice_sni_unrouted_connections_total{reason=\"unknown\"}";
const MISSING: &str = "sluice_sni_unrouted_connections_total{reason=\"missing\"}";

/// An OpenSSL handshake with the SNI port; whether it was completed.
fn handshake(port: u16, ca: &std::path::Path, server_name: Option<&str>) -> bool {
    let mut cmd = Command::new("openssl");
    cmd.args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .arg("-CAfile")
        .arg(ca);
    match server_name {
        Some(name) => cmd.args(["-servername", name]),
        None => cmd.arg("-noservername"),
    };
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .expect("run openssl s_client");
    let text = String::from_utf8_lossy(&out.stdout);
    text.contains("Verify return code: 0 (ok)") && !text.contains("Cipher is (NONE)")
}

#[test]
fn unknown_and_missing_names_and_plaintext_close_only_their_own_connection() {
    let tansu = Tansu::start();
    tansu.create_topic("steady", 2);
    let sni = port();
    let dir = tempfile::tempdir().expect("dir");
    let ca = certificates(dir.path(), &["orders"]);
    let config = with_drain("2s", &[cluster("orders", &tansu.addr, sni, "")]);
    let mut proxy = Proxy::start_in(dir, &config);
    let hosts = hosts(&["orders"]);
    let mut cmd = hosts.python("steady.py");
    cmd.args([
        &format!("{}:{sni}", super::bootstrap("orders")),
        "steady",
        "g",
    ]);
    cmd.arg("--ca").arg(&ca);
    let steady = Steady::start_command(cmd);
    let connections = proxy.metric("sluice_connections_total{cluster=\"orders\"}");

    // A name on the port's domain that no cluster has.
    assert!(!handshake(sni, &ca, Some("bootstrap.nobody.sni.test")));
    proxy.wait_for_metric(UNKNOWN, 1.0, Duration::from_secs(10));
    proxy.wait_for_log("no cluster has this name", Duration::from_secs(10));
    // No server name at all.
    assert!(!handshake(sni, &ca, None));
    proxy.wait_for_metric(MISSING, 1.0, Duration::from_secs(10));
    // A plaintext Kafka client: its ApiVersions request is not a ClientHello.
    let mut plain = Conn::connect(&format!("127.0.0.1:{sni}"));
    plain.send(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert!(plain.closed_within(Duration::from_secs(10)));
    proxy.wait_for_metric(MISSING, 2.0, Duration::from_secs(10));
    proxy.wait_for_log("not TLS", Duration::from_secs(10));
    // A TCP check that connects and closes is not counted.
    drop(std::net::TcpStream::connect(("127.0.0.1", sni)).expect("connect"));

    // The good name still works, on the same port, meanwhile.
    assert!(handshake(sni, &ca, Some(&super::bootstrap("orders"))));
    let report = steady.finish();
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["disconnects"], 0, "{report}");
    assert_eq!(report["lost"], 0, "{report}");
    // The steady clients kept their connections: the one new connection
    // is the handshake check's.
    let after = proxy.metric("sluice_connections_total{cluster=\"orders\"}");
    assert_eq!(after, connections + 1.0);
    assert_eq!(proxy.metric(UNKNOWN), 1.0);
    assert_eq!(proxy.metric(MISSING), 2.0);
    // The handshake check found no broker behind the name it used.
    proxy.allow("client tls handshake");
    proxy.assert_clean_logs();
}
