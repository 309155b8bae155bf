//! A topic policy as two client libraries see it (librdkafka through
//! confluent-kafka, and kafka-python) against tansu through the proxy: a
//! message to an allowed and one to a denied topic get per-topic results,
//! Metadata hides the denied topic, a consumer group on it gets
//! TOPIC_AUTHORIZATION_FAILED (librdkafka) or nothing (kafka-python, which
//! asks for every topic); and one Produce request naming both is split,
//! with a result per topic.

use std::time::Duration;

use kafka_protocol::messages::{
    ApiKey, ProduceRequest, ProduceResponse, TopicName, produce_request,
};
use kafka_protocol::protocol::StrBytes;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::kafka::{Conn, records};
use sluice_tests::peers::{TANSU_NODE_ID, Tansu};
use sluice_tests::python;

const POLICY: &str = "    filters:
      - type: topic-policy
        config:
          default: allow
          rules:
            - deny: [all]
              topics: [secret]
";

/// tansu with `keep` and `secret`, and the proxy in front with [`POLICY`]:
/// the bootstrap address.
fn policed() -> (Tansu, Proxy, String) {
    let tansu = Tansu::start();
    tansu.create_topic("keep", 1);
    tansu.create_topic("secret", 1);
    let base = ports(2);
    let config = format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: edge\n    upstream: {{ bootstrapServers: [\"{}\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }}\n{POLICY}",
        tansu.addr,
        base + 1
    );
    let proxy = Proxy::start(&config);
    let bootstrap = format!("127.0.0.1:{base}");
    (tansu, proxy, bootstrap)
}

#[test]
fn librdkafka_sees_per_topic_results_and_metadata_without_the_denied_topic() {
    let (_tansu, proxy, bootstrap) = policed();
    let report = python::run_json(
        "policy.py",
        &[&bootstrap, "keep", "secret"],
        Duration::from_secs(120),
    );
    assert_eq!(report["delivered"]["keep"]["ok"], true, "{report}");
    assert_eq!(
        report["delivered"]["secret"]["name"], "TOPIC_AUTHORIZATION_FAILED",
        "{report}"
    );
    assert_eq!(report["listed"], serde_json::json!(["keep"]), "{report}");
    assert_eq!(
        report["consumer_error"], "TOPIC_AUTHORIZATION_FAILED",
        "{report}"
    );
    // A consumer of the allowed topic reads it, though the policy denies
    // `consume` on another topic (librdkafka fetches by topic id).
    assert_eq!(report["allowed_read"], true, "{report}");
    // librdkafka learns from Metadata that it may not describe `secret`
    // and fails its message without a Produce.
    assert!(
        proxy.metric(
            "sluice_policy_denied_total{cluster=\"edge\",operation=\"describe\",rule=\"1\",principal=\"\"}"
        ) >= 1.0
    );

    // One Produce request naming both: split, tansu writes `keep`, and
    // the answer has a result per topic.
    let mut conn = Conn::connect(&bootstrap);
    let mut produce = ProduceRequest::default();
    produce.acks = 1;
    produce.timeout_ms = 5000;
    for name in ["keep", "secret"] {
        let mut partition = produce_request::PartitionProduceData::default();
        partition.records = Some(records(3));
        let mut topic = produce_request::TopicProduceData::default();
        topic.name = TopicName(StrBytes::from_static_str(name));
        topic.partition_data = vec![partition];
        produce.topic_data.push(topic);
    }
    let produced: ProduceResponse = conn.call(ApiKey::Produce, 7, &produce);
    let mut results: Vec<(String, i16)> = produced
        .responses
        .iter()
        .map(|t| (t.name.to_string(), t.partition_responses[0].error_code))
        .collect();
    results.sort();
    assert_eq!(
        results,
        [("keep".to_owned(), 0), ("secret".to_owned(), 29)],
        "{produced:?}"
    );
    assert!(
        produced.responses[0].partition_responses[0].base_offset >= 1,
        "written after librdkafka's record: {produced:?}"
    );
    assert_eq!(
        proxy.metric(
            "sluice_policy_denied_total{cluster=\"edge\",operation=\"produce\",rule=\"1\",principal=\"\"}"
        ),
        1.0
    );
    proxy.assert_clean_logs();
}

#[test]
fn kafka_python_sees_the_same() {
    let (_tansu, proxy, bootstrap) = policed();
    let report = python::run_json(
        "policy_kafka_python.py",
        &[&bootstrap, "keep", "secret"],
        Duration::from_secs(120),
    );
    assert_eq!(report["delivered"]["keep"]["ok"], true, "{report}");
    assert_eq!(
        report["delivered"]["secret"]["name"], "TopicAuthorizationFailedError",
        "{report}"
    );
    assert_eq!(report["listed"], serde_json::json!(["keep"]), "{report}");
    // Once it has listed the topics, kafka-python asks Metadata for every
    // topic, whose answer leaves `secret` out (as Kafka's ACLs do): the
    // consumer never learns its partitions, so it neither reads a record
    // nor fails. (It used to learn them, and fail when it used them: its
    // first Metadata, naming no topic, was answered with every topic,
    // `secret` included; issue 46.)
    assert_eq!(
        report["consumer_error"],
        serde_json::Value::Null,
        "{report}"
    );
    proxy.assert_clean_logs();
}
