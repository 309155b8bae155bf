//! A topic policy and a quota changed together under steady produce and
//! consume (steady.py, librdkafka) apply in place: the reload answers the
//! cluster as changed in place, an open connection's next request is judged
//! by the new policy, and the steady clients see no disconnect, no error
//! and nothing lost.

use std::time::Duration;

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::{tansu_cluster, with_drain};
use sluice_tests::kafka::{Conn, records};
use sluice_tests::peers::Tansu;
use sluice_tests::python::Steady;

/// Kafka's TOPIC_AUTHORIZATION_FAILED.
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

/// The Produce requests the proxy has seen on the cluster `live`.
const PRODUCED: &str = "sluice_requests_total{cluster=\"live\",api=\"Produce\"}";

/// Produce v9 of three records to `topic` on `conn`: its error code.
fn produce_on(conn: &mut Conn, topic: &'static str) -> i16 {
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(records(3));
    let mut data = TopicProduceData::default();
    data.name = TopicName(StrBytes::from_static_str(topic));
    data.partition_data = vec![partition];
    let mut request = ProduceRequest::default();
    request.acks = 1;
    request.timeout_ms = 10_000;
    request.topic_data = vec![data];
    let r: ProduceResponse = conn.call(ApiKey::Produce, 9, &request);
    r.responses[0].partition_responses[0].error_code
}

#[test]
fn a_policy_and_a_quota_changed_under_steady_traffic_apply_in_place() {
    let tansu = Tansu::start();
    tansu.create_topic("steady", 3);
    tansu.create_topic("other", 1);
    let port = ports(2);
    let config =
        |filters: &str| with_drain("2s", &[tansu_cluster("live", &tansu.addr, port, filters)]);
    let proxy = Proxy::start(&config(""));
    let bootstrap = format!("127.0.0.1:{port}");
    let clients = Steady::start(&bootstrap, "steady", "steady-group", true);
    // A connection opened before the changes: they reach it at its next request.
    let mut held = Conn::connect(&bootstrap);
    assert_eq!(produce_on(&mut held, "other"), 0);

    let versions = [
        "    filters:
      - type: topic-policy
        config:
          default: allow
          rules: [{ deny: [produce], topics: [other] }]
      - type: quota
        config: { produceBytesPerSecond: 50000000, fetchBytesPerSecond: 50000000 }
",
        "    filters:
      - type: topic-policy
        config:
          default: allow
          rules: [{ deny: [produce, consume], topics: [\"oth*\"] }]
      - type: quota
        config: { produceBytesPerSecond: 40000000, perClientId: { fetchBytesPerSecond: 30000000 } }
",
    ];
    for filters in versions {
        let r = proxy.reload(&config(filters));
        assert_eq!(r.status, 200, "{}", r.body);
        let body = r.json();
        assert_eq!(body["clustersRotated"][0]["name"], "live", "{body}");
        assert_eq!(body["clustersModified"], serde_json::json!([]), "{body}");
        assert_eq!(
            produce_on(&mut held, "other"),
            TOPIC_AUTHORIZATION_FAILED,
            "the open connection's next request"
        );
        // Traffic goes on under the new version before the next one.
        let produced = proxy.metric(PRODUCED);
        proxy.wait_for_metric(PRODUCED, produced + 20.0, Duration::from_secs(30));
    }
    let report = clients.finish();
    assert_eq!(report["lost"], 0, "{report}");
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["disconnects"], 0, "{report}");
    assert_eq!(
        proxy.metric("sluice_drained_connections_total{cluster=\"live\",result=\"clean\"}"),
        0.0,
        "nothing drained"
    );
}
