//! KIP-951 through the proxy, with a broker that has it: librdkafka's mock
//! cluster answers Fetch v16, and after a leader moves its Fetch response
//! names the new leader and, in `NodeEndpoints`, where it listens. The
//! client (librdkafka) must take the new leader from that response, before
//! any Metadata answer, and reach it through the proxy: the endpoints it is
//! given are the proxy's broker ports, never the mock's own.

use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::process::Proc;
use sluice_testkit::proxy::Proxy;
use sluice_tests::peers::MockCluster;
use sluice_tests::python;

#[test]
fn librdkafka_takes_a_moved_leader_from_a_fetch_response_through_the_proxy() {
    let mut mock = MockCluster::start(3, &["moving:1"]);
    mock.set_leader("moving", 0, 1);
    let base = ports(4);
    let servers = mock
        .brokers
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let proxy = Proxy::start(&format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: main\n    upstream: {{ bootstrapServers: [{servers}] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: 3, firstNodeId: 1 }}\n",
        base + 1
    ));
    let mut cmd = python::command("leader_move.py");
    cmd.args([&format!("127.0.0.1:{base}"), "moving"]);
    let mut client = Proc::spawn("leader_move.py", cmd);
    client.wait_for_line("READY 10", Duration::from_secs(60));
    mock.set_leader("moving", 0, 2);
    client.send_line("moved");
    let line = client.wait_for_line("\"consumed\"", Duration::from_secs(90));
    let report: serde_json::Value = serde_json::from_str(&line).expect("a JSON report");

    assert_eq!(report["consumed"], 20, "{report}");
    let updates = report["updates"].as_array().expect("updates");
    assert!(
        updates.iter().any(|u| u["after_metadata"] == false
            && u["line"].as_str().is_some_and(|l| l.contains("leader 2"))),
        "librdkafka took the new leader from the Fetch response, before any Metadata answer: {report}"
    );
    // Every broker the client named after the move is one of the proxy's.
    let proxy_ports: Vec<String> = (1..=3)
        .map(|n| format!("127.0.0.1:{}/{n}", base + n))
        .collect();
    for broker in report["brokers"].as_array().expect("brokers") {
        let broker = broker.as_str().unwrap_or_default();
        assert!(
            proxy_ports.iter().any(|p| p == broker),
            "the client was sent to {broker}, not through the proxy: {report}"
        );
    }
    assert!(
        report["brokers"]
            .as_array()
            .is_some_and(|b| b.iter().any(|x| x == &proxy_ports[1])),
        "the client reached the new leader through the proxy: {report}"
    );
    assert!(
        proxy.metric("sluice_rewrites_total{cluster=\"main\",api=\"Fetch\"}") >= 1.0,
        "the proxy rewrote a Fetch response's endpoints"
    );
}
