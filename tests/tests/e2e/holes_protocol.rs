//! A client's raw requests at the protocol's edges (issue 46), through the
//! proxy to tansu: the versions offered and served, Fetch sessions across
//! a policy change, and what a stream of malformed frames leaves in the
//! log and the metrics.

use std::io::{Read, Write};
use std::time::Duration;

use bytes::{Buf, Bytes};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::Decodable;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::kafka::Conn;
use sluice_tests::peers::{TANSU_NODE_ID, Tansu};

/// The proxy's configuration in front of `tansu`, on ports from `base`,
/// with `filters` (indented for the cluster) if any.
fn config(tansu: &Tansu, base: u16, filters: &str) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: edge\n    upstream: {{ bootstrapServers: [\"{}\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }}\n{filters}",
        tansu.addr,
        base + 1
    )
}

/// tansu and the proxy in front of it with `filters`: the bootstrap
/// address.
fn fronted(filters: &str) -> (Tansu, Proxy, String, u16) {
    let tansu = Tansu::start();
    let base = ports(2);
    let proxy = Proxy::start(&config(&tansu, base, filters));
    (tansu, proxy, format!("127.0.0.1:{base}"), base)
}

/// Reads one response frame (its length prefix taken off).
fn read_frame(conn: &mut Conn) -> Bytes {
    let mut len = [0u8; 4];
    conn.stream.read_exact(&mut len).expect("a response");
    let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
    conn.stream.read_exact(&mut buf).expect("a whole response");
    Bytes::from(buf)
}

#[test]
fn only_the_versions_the_proxy_judges_are_offered_and_served() {
    let (_tansu, mut proxy, bootstrap, _) = fronted("");
    let mut conn = Conn::connect(&bootstrap);
    let offered: ApiVersionsResponse =
        conn.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(offered.error_code, 0);
    let range = |api: ApiKey| {
        let k = offered.api_keys.iter().find(|k| k.api_key == api as i16);
        k.map(|k| (k.min_version, k.max_version))
    };
    // Kafka 4.0's baseline (KIP-896): tansu offers from v0.
    for (api, min) in [
        (ApiKey::Produce, 3),
        (ApiKey::Fetch, 4),
        (ApiKey::ListOffsets, 1),
        (ApiKey::OffsetFetch, 1),
        (ApiKey::OffsetCommit, 2),
        (ApiKey::CreateTopics, 2),
        (ApiKey::DeleteTopics, 1),
    ] {
        let (got, _) = range(api).unwrap_or_else(|| panic!("{api:?} offered: {offered:?}"));
        assert_eq!(got, min, "{api:?}: {offered:?}");
    }
    for k in &offered.api_keys {
        let api = ApiKey::try_from(k.api_key).expect("a known API");
        let served = api.valid_versions();
        assert!(k.min_version >= served.min, "{api:?}: {k:?}");
        assert!(k.max_version <= served.max, "{api:?}: {k:?}");
    }

    // ApiVersions at a version the proxy cannot read: UNSUPPORTED_VERSION
    // as v0, the versions it serves, and the connection stays open.
    let max = ApiKey::ApiVersions.valid_versions().max;
    let mut frame = sluice_kafka::encode::request(
        ApiKey::ApiVersions,
        max,
        7,
        "sluice-test",
        &ApiVersionsRequest::default(),
    )
    .unwrap()
    .to_vec();
    frame[6..8].copy_from_slice(&(max + 1).to_be_bytes());
    conn.stream.write_all(&frame).unwrap();
    let mut answer = read_frame(&mut conn);
    assert_eq!(answer.get_i32(), 7, "its correlation id");
    let refused = ApiVersionsResponse::decode(&mut answer, 0).unwrap();
    assert_eq!(refused.error_code, 35, "{refused:?}");
    assert_eq!(refused.api_keys[0].max_version, max, "{refused:?}");
    let again: ApiVersionsResponse =
        conn.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(again.error_code, 0);

    // Fetch v3 (which the codec cannot read): the connection is closed,
    // with one line that says why.
    let mut frame =
        sluice_kafka::encode::request(ApiKey::Fetch, 4, 9, "sluice-test", &FetchRequest::default())
            .unwrap()
            .to_vec();
    frame[6..8].copy_from_slice(&3i16.to_be_bytes());
    conn.stream.write_all(&frame).unwrap();
    assert!(conn.closed_within(Duration::from_secs(10)));
    proxy.wait_for_log("Fetch v3 is not served", Duration::from_secs(10));
    let unsupported = "sluice_client_errors_total{cluster=\"edge\",cause=\"unsupported_version\"}";
    assert_eq!(proxy.metric(unsupported), 1.0);
    proxy.allow("Fetch v3 is not served");
    proxy.assert_clean_logs();
}

const OPEN: &str = "    filters:
      - type: topic-policy
        config:
          default: deny
          rules:
            - allow: [all]
              topics: [\"open.*\"]
            - allow: [consume, describe]
              topics: [\"ro.*\"]
";

/// A Fetch v12 (by name) of partition 0 of each of `topics` in session
/// `id` at `epoch`.
fn fetch(id: i32, epoch: i32, topics: &[&str]) -> FetchRequest {
    let mut r = FetchRequest::default();
    r.max_wait_ms = 10;
    r.max_bytes = 1 << 20;
    r.session_id = id;
    r.session_epoch = epoch;
    for n in topics {
        let mut p = fetch_request::FetchPartition::default();
        p.partition_max_bytes = 1 << 20;
        let mut t = fetch_request::FetchTopic::default();
        t.topic = TopicName(kafka_protocol::protocol::StrBytes::from_string(
            (*n).to_owned(),
        ));
        t.partitions = vec![p];
        r.topics.push(t);
    }
    r
}

#[test]
fn a_session_opened_before_a_consume_change_is_reset_on_any_connection() {
    let (tansu, proxy, _, base) = fronted(OPEN);
    for name in ["open.a", "ro.x"] {
        tansu.create_topic(name, 1);
    }
    let broker = format!("127.0.0.1:{}", base + 1);
    // A consumer of `open.a` opens a session (tansu keeps none: id 0).
    let mut first = Conn::connect(&broker);
    let opened: FetchResponse = first.call(ApiKey::Fetch, 12, &fetch(0, 0, &["open.a"]));
    assert_eq!(opened.error_code, 0, "{opened:?}");

    // `open.a` denied to consumers.
    let denied = OPEN.replace("topics: [\"open.*\"]", "topics: [\"open.b\"]");
    let r = proxy.reload(&config(&tansu, base, &denied));
    assert_eq!(r.status, 200, "{}", r.body);

    // Another connection: a sessionless full Fetch of `ro.x` (judged by
    // the rules in force), then an incremental Fetch continuing a session
    // opened before the change: answered by the proxy, never forwarded.
    let mut second = Conn::connect(&broker);
    let sessionless: FetchResponse = second.call(ApiKey::Fetch, 12, &fetch(0, -1, &["ro.x"]));
    assert_eq!(sessionless.error_code, 0, "{sessionless:?}");
    let resets = "sluice_fetch_sessions_reset_total{cluster=\"edge\"}";
    assert_eq!(proxy.metric(resets), 0.0);
    let reset: FetchResponse = second.call(ApiKey::Fetch, 12, &fetch(4242, 1, &[]));
    assert_eq!(reset.error_code, 71, "{reset:?}");
    assert!(reset.responses.is_empty(), "{reset:?}");
    assert_eq!(proxy.metric(resets), 1.0, "answered by the proxy");
    // The client fetches in full: judged (and split) by the rules in force.
    let full: FetchResponse = second.call(ApiKey::Fetch, 12, &fetch(4242, 0, &["open.a", "ro.x"]));
    let mut errors: Vec<(String, i16)> = full
        .responses
        .iter()
        .map(|t| (t.topic.to_string(), t.partitions[0].error_code))
        .collect();
    errors.sort();
    assert_eq!(
        errors,
        [("open.a".to_owned(), 29), ("ro.x".to_owned(), 0)],
        "{full:?}"
    );
    proxy.assert_clean_logs();
}

#[test]
fn a_client_sending_garbage_in_a_loop_is_counted_and_warned_about_once() {
    let (_tansu, mut proxy, bootstrap, _) = fronted("");
    let series =
        |cause: &str| format!("sluice_client_errors_total{{cluster=\"edge\",cause=\"{cause}\"}}");
    assert_eq!(
        proxy.metric(&series("malformed")),
        0.0,
        "at 0 from the start"
    );
    // Sixty connections, each a frame too short to hold a request header.
    const TRIES: usize = 60;
    for _ in 0..TRIES {
        let mut conn = Conn::connect(&bootstrap);
        conn.stream.write_all(&[0, 0, 0, 2, 1, 2]).unwrap();
        assert!(conn.closed_within(Duration::from_secs(10)));
    }
    proxy.wait_for_metric(&series("malformed"), TRIES as f64, Duration::from_secs(10));
    assert_eq!(proxy.metric(&series("too_large")), 0.0);
    let warned: Vec<String> = proxy
        .logs()
        .into_iter()
        .filter(|l| l.contains("connection closed on protocol error"))
        .collect();
    // Within the 10 s window, one line (two if the loop spanned a window).
    assert!(
        (1..=2).contains(&warned.len()),
        "{} lines:\n{}",
        warned.len(),
        warned.join("\n")
    );
    assert!(
        warned[0].contains("\"cause\":\"malformed\""),
        "{}",
        warned[0]
    );
    proxy.allow("connection closed on protocol error");
    proxy.assert_clean_logs();
}
