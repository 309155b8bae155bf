//! The gateway's behaviour towards clients: filters, broker ports used
//! before any bootstrap, node ids outside the port range, connection limits
//! and hostile byte streams. Real broker (tansu) or librdkafka's mock.

use std::io::Write;
use std::time::Duration;

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
    MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, TopicName, produce_request,
};
use kafka_protocol::protocol::StrBytes;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::kafka::{Conn, records};
use sluice_tests::peers::{MockCluster, TANSU_NODE_ID, Tansu};
use sluice_tests::python;

fn config(upstream: &str, bootstrap: u16, first_node: i32, count: u16, extra: &str) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: edge\n    upstream: {{ bootstrapServers: [\"{upstream}\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {bootstrap}\n      brokerPorts: {{ start: {}, count: {count}, firstNodeId: {first_node} }}\n{extra}",
        bootstrap + 1
    )
}

fn tansu_proxy(extra: &str) -> (Tansu, Proxy, u16) {
    let tansu = Tansu::start();
    tansu.create_topic("keep", 1);
    let base = ports(2);
    let proxy = Proxy::start(&config(&tansu.addr, base, TANSU_NODE_ID, 1, extra));
    (tansu, proxy, base)
}

fn metadata(conn: &mut Conn) -> MetadataResponse {
    let mut req = MetadataRequest::default();
    req.topics = None;
    conn.call(ApiKey::Metadata, 9, &req)
}

#[test]
fn deny_apis_answers_a_real_admin_client_and_the_connection_stays_usable() {
    let filters = "    filters:\n      - type: deny-apis\n        config: { apis: [DeleteTopics, CreateTopics] }\n";
    let (_tansu, proxy, base) = tansu_proxy(filters);
    let bootstrap = format!("127.0.0.1:{base}");

    let deleted = python::run_json(
        "admin.py",
        &[&bootstrap, "delete-topic", "keep"],
        Duration::from_secs(60),
    );
    assert_eq!(deleted["keep"]["ok"], false, "{deleted}");
    assert_eq!(deleted["keep"]["name"], "POLICY_VIOLATION", "{deleted}");
    let created = python::run_json(
        "admin.py",
        &[&bootstrap, "create-topic", "fresh", "1"],
        Duration::from_secs(60),
    );
    assert_eq!(created["fresh"]["name"], "POLICY_VIOLATION", "{created}");
    let listed = python::run_json(
        "admin.py",
        &[&bootstrap, "list-topics"],
        Duration::from_secs(60),
    );
    assert_eq!(
        listed["topics"],
        serde_json::json!(["keep"]),
        "the topic survived: {listed}"
    );

    // One connection: a denied DeleteTopics, then a Produce that succeeds.
    let mut conn = Conn::connect(&bootstrap);
    let mut delete = DeleteTopicsRequest::default();
    delete.topic_names = vec![TopicName(StrBytes::from_static_str("keep"))];
    delete.timeout_ms = 5000;
    let refused: DeleteTopicsResponse = conn.call(ApiKey::DeleteTopics, 4, &delete);
    assert_eq!(refused.responses[0].error_code, 44);
    let mut produce = ProduceRequest::default();
    produce.acks = 1;
    produce.timeout_ms = 5000;
    let mut partition = produce_request::PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(records(5));
    let mut topic = produce_request::TopicProduceData::default();
    topic.name = TopicName(StrBytes::from_static_str("keep"));
    topic.partition_data = vec![partition];
    produce.topic_data = vec![topic];
    let produced: ProduceResponse = conn.call(ApiKey::Produce, 7, &produce);
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    assert!(
        proxy.metric("sluice_denied_requests_total{cluster=\"edge\",api=\"DeleteTopics\"}") >= 2.0
    );
    proxy.assert_clean_logs();
}

#[test]
fn a_client_may_start_on_a_broker_port_before_any_bootstrap() {
    let (_tansu, proxy, base) = tansu_proxy("");
    let broker_port = format!("127.0.0.1:{}", base + 1);
    // The proxy has learned nothing yet: it asks the upstream itself.
    let mut conn = Conn::connect(&broker_port);
    let versions: ApiVersionsResponse =
        conn.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(versions.error_code, 0);
    let md = metadata(&mut conn);
    assert_eq!(md.brokers.len(), 1);
    assert_eq!(md.brokers[0].node_id.0, TANSU_NODE_ID);
    assert_eq!(md.brokers[0].port, i32::from(base + 1));
    drop(conn);
    let report = python::run_json(
        "roundtrip.py",
        &[&broker_port, "keep", "50", "direct"],
        Duration::from_secs(60),
    );
    assert_eq!(report["unique"], 50, "{report}");
    assert_eq!(report["consumed"], 50, "{report}");
    proxy.assert_clean_logs();
}

#[test]
fn node_ids_outside_the_port_range_are_hidden_logged_and_counted() {
    let mock = MockCluster::start(3, &["wide:3"]);
    let base = ports(3);
    // Ports for nodes 1 and 2 only; node 3 has none.
    let mut proxy = Proxy::start(&config(&mock.brokers[0], base, 1, 2, ""));
    proxy.allow("outside the broker port range");
    let listed = python::run_json(
        "admin.py",
        &[&format!("127.0.0.1:{base}"), "list-topics"],
        Duration::from_secs(60),
    );
    assert_eq!(
        listed["brokers"],
        serde_json::json!([[1, "127.0.0.1", base + 1], [2, "127.0.0.1", base + 2]]),
        "{listed}"
    );
    assert!(proxy.metric("sluice_unknown_nodes_total{cluster=\"edge\"}") >= 1.0);
    let warning = proxy.wait_for_log("outside the broker port range", Duration::from_secs(5));
    assert!(warning.contains("\"node\":3"), "{warning}");
    proxy.assert_clean_logs();
}

#[test]
fn connections_beyond_max_connections_are_closed_at_once_and_counted() {
    let (_tansu, proxy, base) = tansu_proxy("    limits: { maxConnections: 3 }\n");
    let addr = format!("127.0.0.1:{base}");
    let mut admitted: Vec<Conn> = (0..3).map(|_| Conn::connect(&addr)).collect();
    for c in &mut admitted {
        let v: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
        assert_eq!(v.error_code, 0);
    }
    for _ in 0..2 {
        let mut extra = Conn::connect(&addr);
        assert!(
            extra.closed_within(Duration::from_secs(5)),
            "a fourth connection was kept"
        );
    }
    assert_eq!(
        proxy.metric(
            "sluice_connections_rejected_total{cluster=\"edge\",reason=\"max_connections\"}"
        ),
        2.0
    );
    // The admitted ones still work; closing one frees a slot.
    let md = metadata(&mut admitted[0]);
    assert_eq!(md.brokers.len(), 1);
    drop(admitted.pop());
    let mut wait = 0;
    let mut again = loop {
        let mut c = Conn::connect(&addr);
        c.stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let alive = !c.closed_within(Duration::from_millis(200));
        if alive {
            break c;
        }
        wait += 1;
        assert!(wait < 50, "no slot freed after closing a connection");
    };
    assert_eq!(metadata(&mut again).brokers.len(), 1);
    proxy.assert_clean_logs();
}

#[test]
fn hostile_byte_streams_close_only_their_own_connection() {
    let (_tansu, mut proxy, base) = tansu_proxy("    limits: { frameTimeout: 1s }\n");
    proxy.allow("connection closed on protocol error");
    let addr = format!("127.0.0.1:{base}");
    let mut healthy = Conn::connect(&addr);
    assert_eq!(metadata(&mut healthy).brokers.len(), 1);

    let hostile: [(&str, &[u8]); 3] = [
        ("2 GiB length prefix", &[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
        ("negative length", &[0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4]),
        ("frame too short for a header", &[0, 0, 0, 2, 0xde, 0xad]),
    ];
    for (what, bytes) in hostile {
        let mut c = Conn::connect(&addr);
        c.stream.write_all(bytes).unwrap();
        assert!(
            c.closed_within(Duration::from_secs(5)),
            "{what}: connection left open"
        );
    }
    // Slowloris: half a frame, then nothing.
    let mut slow = Conn::connect(&addr);
    slow.stream
        .write_all(&[0, 0, 0, 100, 0, 3, 0, 9, 0, 0])
        .unwrap();
    assert!(
        slow.closed_within(Duration::from_secs(10)),
        "half a frame held the connection open"
    );

    // The healthy connection and a full client run see no error.
    assert_eq!(metadata(&mut healthy).brokers.len(), 1);
    let report = python::run_json(
        "roundtrip.py",
        &[&addr, "keep", "100", "calm"],
        Duration::from_secs(60),
    );
    assert_eq!(report["unique"], 100, "{report}");
    assert_eq!(
        report["errors"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    let closed = |reason: &str| {
        proxy.metric(&format!(
            "sluice_connections_closed_on_error_total{{cluster=\"edge\",reason=\"{reason}\"}}"
        ))
    };
    assert_eq!(closed("too_large"), 1.0);
    assert_eq!(closed("malformed"), 2.0);
    assert_eq!(closed("frame_timeout"), 1.0);
    proxy.assert_clean_logs();
}

/// A request frame: length, header (api key, version, correlation id 1, no
/// client id, and the empty tag section of flexible header versions), body.
fn raw_request(api: ApiKey, version: i16, body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend_from_slice(&(api as i16).to_be_bytes());
    frame.extend_from_slice(&version.to_be_bytes());
    frame.extend_from_slice(&1i32.to_be_bytes());
    frame.extend_from_slice(&(-1i16).to_be_bytes());
    if api.request_header_version(version) >= 2 {
        frame.push(0);
    }
    frame.extend_from_slice(body);
    let mut out = (frame.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&frame);
    out
}

/// The fuzzer's first finding, on the path a client controls: kafka-protocol
/// reserves memory for an array's declared length before reading it, so a
/// denied request declaring 1.4 billion topics used to abort the proxy.
#[test]
fn a_denied_request_declaring_a_huge_array_closes_only_its_connection() {
    let filters = "    filters:\n      - type: deny-apis\n        config: { apis: [DeleteTopics, CreateTopics] }\n";
    let (_tansu, mut proxy, base) = tansu_proxy(filters);
    proxy.allow("connection closed on protocol error");
    let addr = format!("127.0.0.1:{base}");
    let mut healthy = Conn::connect(&addr);
    assert_eq!(metadata(&mut healthy).brokers.len(), 1);

    let hostile = [
        // CreateTopics v2 (classic): 0x54545454 topics, then nothing.
        raw_request(ApiKey::CreateTopics, 2, &[0x54, 0x54, 0x54, 0x54, 0, 0]),
        // DeleteTopics v4 (compact): 2^32 - 2 topic names.
        raw_request(ApiKey::DeleteTopics, 4, &[0xff, 0xff, 0xff, 0xff, 0x0f, 0]),
    ];
    for bytes in hostile {
        let mut c = Conn::connect(&addr);
        c.stream.write_all(&bytes).unwrap();
        assert!(
            c.closed_within(Duration::from_secs(5)),
            "connection left open"
        );
    }
    assert_eq!(metadata(&mut healthy).brokers.len(), 1);
    assert_eq!(
        proxy.metric(
            "sluice_connections_closed_on_error_total{cluster=\"edge\",reason=\"malformed\"}"
        ),
        2.0
    );
    let log = proxy.wait_for_log("an array of 1414812756 elements", Duration::from_secs(5));
    assert!(
        log.contains("malformed CreateTopics v2 request: CreateTopicsRequest.topics"),
        "{log}"
    );
    proxy.assert_clean_logs();
}
