//! Two SNI clusters on one port, each in front of its own broker: produce
//! and consume through a consumer group with librdkafka verifying the
//! certificate for every name; the metadata holds only the SNI names and
//! the one port, and the socket table shows the clients connected to no
//! other proxy port.

use std::time::Duration;

use sluice_testkit::ports::port;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::with_drain;
use sluice_tests::peers::{TANSU_NODE_ID, Tansu};
use sluice_tests::python;
use sluice_tests::sockets;

use super::{broker, certificates, cluster, hosts};

#[test]
fn two_sni_clusters_on_one_port_round_trip_with_a_consumer_group_each() {
    let (orders, payments) = (Tansu::start(), Tansu::start());
    orders.create_topic("orders", 2);
    payments.create_topic("payments", 2);
    let sni = port();
    let dir = tempfile::tempdir().expect("dir");
    let ca = certificates(dir.path(), &["orders", "payments"]);
    let config = with_drain(
        "2s",
        &[
            cluster("orders", &orders.addr, sni, ""),
            cluster("payments", &payments.addr, sni, ""),
        ],
    );
    let proxy = Proxy::start_in(dir, &config);
    let hosts = hosts(&["orders", "payments"]);
    let ca = ca.display().to_string();

    let mut held = Vec::new();
    for (name, tansu) in [("orders", &orders), ("payments", &payments)] {
        let mut cmd = hosts.python("roundtrip.py");
        let bootstrap = format!("{}:{sni}", super::bootstrap(name));
        cmd.args([&bootstrap, name, "200", &format!("{name}-group")]);
        cmd.args(["--ssl", &ca, "-", "-", "--verify-names"]);
        let client = python::holding(cmd);
        let report = &client.report;
        assert_eq!(report["unique"], 200, "{name}: {report}");
        assert_eq!(report["acked"], 200, "{name}: {report}");
        assert_eq!(report["errors"], serde_json::json!([]), "{name}: {report}");
        // Only the SNI name of the one broker, at the one port.
        assert_eq!(
            report["brokers"],
            serde_json::json!([[TANSU_NODE_ID, broker(name), sni]]),
            "{name}"
        );
        // The client talks to the SNI port only, never to a broker.
        let peers = sockets::peers_of(client.pid());
        assert!(!peers.is_empty(), "{name}: no connection seen");
        assert!(peers.iter().all(|p| *p == sni), "{name}: {peers:?}");
        assert!(!peers.contains(&tansu.port()));
        held.push(client);
    }
    // The bootstrap and the broker connections of both clusters came
    // through the one port; nothing was left unrouted.
    for name in ["orders", "payments"] {
        let total = proxy.metric(&format!("sluice_connections_total{{cluster=\"{name}\"}}"));
        assert!(total >= 2.0, "{name}: {total} connections");
    }
    assert_eq!(
        proxy.metric("sluice_sni_unrouted_connections_total{reason=\"unknown\"}"),
        0.0
    );
    assert_eq!(
        proxy.metric("sluice_sni_unrouted_connections_total{reason=\"missing\"}"),
        0.0
    );
    // The proxy listens on that one port (and its admin port), no other.
    let clusters = proxy.clusters();
    for c in &clusters.clusters {
        assert_eq!(c.listeners, [format!("127.0.0.1:{sni}")], "{c:?}");
        let names = c.sni.as_ref().expect("SNI names in /admin/clusters");
        assert_eq!(names.bootstrap_host, super::bootstrap(&c.name));
        assert_eq!(
            names.broker_host_pattern,
            format!("broker-$(nodeId).{}.{}", c.name, super::DOMAIN)
        );
    }
    drop(held);
    // Clients closed: nothing waits on the proxy.
    proxy.wait_for_metric(
        "sluice_connections_total{cluster=\"orders\"}",
        2.0,
        Duration::from_secs(1),
    );
    proxy.assert_clean_logs();
}
