//! KIP-951 through the proxy, with a broker that has it: librdkafka's mock
//! cluster answers Fetch v16, and after a leader moves its Fetch response
//! names the new leader and, in `NodeEndpoints`, where it listens. The
//! client (librdkafka) must take the new leader from that response, before
//! any Metadata answer, and reach it through the proxy: the endpoints it is
//! given are the proxy's (a broker port each, or the broker's SNI name on
//! the one TLS port), never the mock's own.

use std::process::Command;
use std::time::Duration;

use sluice_testkit::certs::Ca;
use sluice_testkit::ports::ports;
use sluice_testkit::process::Proc;
use sluice_testkit::proxy::Proxy;
use sluice_tests::hosts::Hosts;
use sluice_tests::peers::MockCluster;
use sluice_tests::python;

const TOPIC: &str = "moving";

/// The mock's three brokers as the proxy's upstream, partition 0 of
/// [`TOPIC`] led by node 1.
fn mock() -> (MockCluster, String) {
    let mut mock = MockCluster::start(3, &[&format!("{TOPIC}:1")]);
    mock.set_leader(TOPIC, 0, 1);
    let servers = mock
        .brokers
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ");
    (mock, servers)
}

/// Runs `leader_move.py` (its command given, arguments and all): moves the
/// leader to node 2 once the client has read, and returns its report.
fn moved_under(client: Command, mock: &mut MockCluster) -> serde_json::Value {
    let mut client = Proc::spawn("leader_move.py", client);
    client.wait_for_line("READY 10", Duration::from_secs(60));
    mock.set_leader(TOPIC, 0, 2);
    client.send_line("moved");
    let line = client.wait_for_line("\"consumed\"", Duration::from_secs(90));
    serde_json::from_str(&line).expect("a JSON report")
}

/// The client read everything, took node 2 from a Fetch response before
/// any Metadata answer, and named no broker but `proxy_brokers` (node 1
/// first) after the move, node 2's among them.
fn assert_learned_through_the_proxy(report: &serde_json::Value, proxy_brokers: &[String]) {
    assert_eq!(report["consumed"], 20, "{report}");
    let updates = report["updates"].as_array().expect("updates");
    assert!(
        updates.iter().any(|u| u["after_metadata"] == false
            && u["line"].as_str().is_some_and(|l| l.contains("leader 2"))),
        "librdkafka took the new leader from the Fetch response, before any Metadata answer: {report}"
    );
    let named = report["brokers"].as_array().expect("brokers");
    for broker in named {
        let broker = broker.as_str().unwrap_or_default();
        assert!(
            proxy_brokers.iter().any(|p| p == broker),
            "the client was sent to {broker}, not through the proxy: {report}"
        );
    }
    assert!(
        named.iter().any(|b| b == &proxy_brokers[1]),
        "the client reached the new leader through the proxy: {report}"
    );
}

#[test]
fn librdkafka_takes_a_moved_leader_from_a_fetch_response_through_the_proxy() {
    let (mut mock, servers) = mock();
    let base = ports(4);
    let proxy = Proxy::start(&format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: main\n    upstream: {{ bootstrapServers: [{servers}] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: 3, firstNodeId: 1 }}\n",
        base + 1
    ));
    let mut cmd = python::command("leader_move.py");
    cmd.args([&format!("127.0.0.1:{base}"), TOPIC]);
    let report = moved_under(cmd, &mut mock);
    let brokers: Vec<String> = (1..=3)
        .map(|n| format!("127.0.0.1:{}/{n}", base + n))
        .collect();
    assert_learned_through_the_proxy(&report, &brokers);
    assert!(
        proxy.metric("sluice_rewrites_total{cluster=\"main\",api=\"Fetch\"}") >= 1.0,
        "the proxy rewrote a Fetch response's endpoints"
    );
}

#[test]
fn with_sni_routing_the_moved_leader_is_its_name_on_the_one_port() {
    let (mut mock, servers) = mock();
    let sni = ports(1);
    let domain = "kip.sni.test";
    let dir = tempfile::tempdir().expect("dir");
    let ca = Ca::new("sluice kip951 test CA");
    ca.sign(&[&format!("*.{domain}")], "kip", None)
        .write(dir.path(), "kip.crt", "kip.key");
    let ca = ca.write(dir.path(), "ca.pem").display().to_string();
    let proxy = Proxy::start_in(
        dir,
        &format!(
            "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: kip\n    upstream: {{ bootstrapServers: [{servers}] }}\n    gateway:\n      listenHost: 127.0.0.1\n      sni:\n        port: {sni}\n        bootstrapHost: bootstrap.{domain}\n        brokerHostPattern: \"broker-$(nodeId).{domain}\"\n      tls: {{ certFile: kip.crt, keyFile: kip.key }}\n"
        ),
    );
    let brokers: Vec<String> = (1..=3)
        .map(|n| format!("broker-{n}.{domain}:{sni}/{n}"))
        .collect();
    let mut names: Vec<String> = (1..=3).map(|n| format!("broker-{n}.{domain}")).collect();
    names.push(format!("bootstrap.{domain}"));
    let hosts = Hosts::new(&names);
    let mut cmd = hosts.python("leader_move.py");
    cmd.args([&format!("bootstrap.{domain}:{sni}"), TOPIC, "--ssl", &ca]);
    let report = moved_under(cmd, &mut mock);
    assert_learned_through_the_proxy(&report, &brokers);
    assert!(
        proxy.metric("sluice_rewrites_total{cluster=\"kip\",api=\"Fetch\"}") >= 1.0,
        "the proxy rewrote a Fetch response's endpoints"
    );
}
