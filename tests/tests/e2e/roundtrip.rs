//! Real clients through the proxy to real brokers: every message exactly
//! once with a consumer group, only proxy addresses visible, and no client
//! connection reaching an upstream broker directly.

use std::io::Write;
use std::process::{Command, Stdio};

use sluice_tests::sockets;
use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::peers::{MockCluster, TANSU_NODE_ID, Tansu};
use sluice_tests::python;

const N: usize = 300;

fn config(upstream: &[String], bootstrap: u16, first_node: i32, count: u16) -> String {
    let servers = upstream
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: main\n    upstream: {{ bootstrapServers: [{servers}] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {bootstrap}\n      brokerPorts: {{ start: {}, count: {count}, firstNodeId: {first_node} }}\n",
        bootstrap + 1
    )
}

fn assert_exactly_once(report: &serde_json::Value, what: &str) {
    assert_eq!(report["acked"], N, "{what}: {report}");
    assert_eq!(report["unique"], N, "{what}: {report}");
    assert_eq!(report["consumed"], N, "{what}: duplicates: {report}");
    assert_eq!(
        report["errors"].as_array().map(Vec::len),
        Some(0),
        "{what}: {report}"
    );
}

/// Every broker clients see is the proxy's, on its broker ports.
fn assert_proxy_brokers(
    report: &serde_json::Value,
    bootstrap: u16,
    nodes: &[i32],
    first_node: i32,
) {
    let brokers: Vec<(i64, String, i64)> = report["brokers"]
        .as_array()
        .expect("brokers")
        .iter()
        .map(|b| {
            (
                b[0].as_i64().unwrap(),
                b[1].as_str().unwrap().to_owned(),
                b[2].as_i64().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(i64, String, i64)> = nodes
        .iter()
        .map(|n| {
            (
                i64::from(*n),
                "127.0.0.1".to_owned(),
                i64::from(bootstrap) + 1 + i64::from(n - first_node),
            )
        })
        .collect();
    assert_eq!(brokers, expected);
}

#[test]
fn three_brokers_modern_and_old_clients_round_trip_through_the_proxy() {
    let mut mock = MockCluster::start(3, &["orders:6", "legacy:6"]);
    // The mock places partition leaders at random: sometimes a node leads
    // none of `orders`, and the holding client below never connects to it.
    // Spread them over all three nodes, so every broker is needed.
    for partition in 0..6 {
        mock.set_leader("orders", partition, partition as u32 % 3 + 1);
    }
    let base = ports(4);
    let proxy = Proxy::start(&config(&mock.brokers[..1], base, 1, 3));
    let bootstrap = format!("127.0.0.1:{base}");

    let modern = python::run_json(
        "roundtrip.py",
        &[&bootstrap, "orders", &N.to_string(), "modern"],
        Duration::from_secs(120),
    );
    assert_exactly_once(&modern, "modern client");
    assert_proxy_brokers(&modern, base, &[1, 2, 3], 1);

    let old = python::run_json(
        "roundtrip.py",
        &[&bootstrap, "legacy", &N.to_string(), "old", "--old"],
        Duration::from_secs(120),
    );
    assert_exactly_once(&old, "old client");
    assert_proxy_brokers(&old, base, &[1, 2, 3], 1);

    // Partitions are led by all three nodes, so the client reaches all three
    // through their broker ports, and only the proxy reaches the brokers.
    let holding = python::roundtrip_holding(&[&bootstrap, "orders", "120", "holder"]);
    assert_eq!(holding.report["acked"], 120, "{}", holding.report);
    assert_only_the_proxy_reaches(
        &mock.ports(),
        proxy.pid(),
        holding.pid(),
        &[base, base + 1, base + 2, base + 3],
    );
    drop(holding);
    assert!(proxy.metric("sluice_rewrites_total{cluster=\"main\",api=\"Metadata\"}") > 0.0);
    assert!(proxy.metric("sluice_rewrites_total{cluster=\"main\",api=\"FindCoordinator\"}") > 0.0);
    proxy.assert_clean_logs();
}

#[test]
fn kcat_with_an_older_librdkafka_lists_and_consumes_through_the_proxy() {
    let mock = MockCluster::start(3, &["events:3"]);
    let base = ports(4);
    let proxy = Proxy::start(&config(&mock.brokers[2..], base, 1, 3));
    let bootstrap = format!("127.0.0.1:{base}");
    let mut produce = Command::new("kcat")
        .args(["-b", &bootstrap, "-P", "-t", "events", "-K", ":"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat");
    {
        let mut stdin = produce.stdin.take().expect("stdin");
        for i in 0..50 {
            writeln!(stdin, "k{i}:v{i}").unwrap();
        }
    }
    assert!(produce.wait().unwrap().success());
    let out = Command::new("kcat")
        .args([
            "-b", &bootstrap, "-C", "-t", "events", "-e", "-q", "-f", "%k\\n",
        ])
        .output()
        .expect("kcat -C");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut keys: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 50);
    let listing = Command::new("kcat")
        .args(["-b", &bootstrap, "-L"])
        .output()
        .expect("kcat -L");
    let listing = String::from_utf8_lossy(&listing.stdout);
    for port in mock.ports() {
        assert!(
            !listing.contains(&format!(":{port}")),
            "upstream port {port} leaked:\n{listing}"
        );
    }
    assert!(
        listing.contains(&format!("127.0.0.1:{}", base + 1)),
        "{listing}"
    );
    proxy.assert_clean_logs();
}

#[test]
fn tansu_round_trip_and_no_client_connection_bypasses_the_proxy() {
    let tansu = Tansu::start();
    tansu.create_topic("payments", 3);
    let base = ports(2);
    let proxy = Proxy::start(&config(
        std::slice::from_ref(&tansu.addr),
        base,
        TANSU_NODE_ID,
        1,
    ));
    let bootstrap = format!("127.0.0.1:{base}");

    let client = python::roundtrip_holding(&[&bootstrap, "payments", &N.to_string(), "g1"]);
    assert_exactly_once(&client.report, "tansu");
    assert_proxy_brokers(&client.report, base, &[TANSU_NODE_ID], TANSU_NODE_ID);
    assert_only_the_proxy_reaches(
        &[tansu.port()],
        proxy.pid(),
        client.pid(),
        &[base, base + 1],
    );
    drop(client);
    proxy.assert_clean_logs();
}

/// Address-level check, while the client holds its connections: every
/// established connection to an upstream broker belongs to the proxy, each
/// broker has one, and the client is connected to proxy ports only.
fn assert_only_the_proxy_reaches(upstream: &[u16], proxy: u32, client: u32, proxy_ports: &[u16]) {
    for port in upstream {
        // The client may still be opening its connection to this broker.
        let mut owners = sockets::owners_of_connections_to(*port);
        for _ in 0..50 {
            if !owners.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            owners = sockets::owners_of_connections_to(*port);
        }
        assert!(
            !owners.is_empty(),
            "nothing connected to upstream port {port}"
        );
        assert!(
            owners.iter().all(|pid| *pid == proxy),
            "upstream port {port} reached by {owners:?}; proxy is {proxy}"
        );
    }
    let peers = sockets::peers_of(client);
    assert!(!peers.is_empty(), "the client holds no connection");
    assert!(
        peers.iter().all(|p| proxy_ports.contains(p)),
        "the client talks to {peers:?}, proxy ports are {proxy_ports:?}"
    );
}
