//! A hostile client's raw requests against the topic policy (issue 46),
//! through the proxy to tansu, under the policy: `allow [all]` on
//! `open.*`, `allow [consume, describe]` on `ro.*`, everything else
//! denied. Each attack is answered with the exact error a broker's ACLs
//! give, the broker's state is checked where the attack would change it,
//! and the connection stays open.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_kafka::cluster::CLUSTER_AUTHORIZATION_FAILED;
use sluice_kafka::policy::Uuid;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::kafka::Conn;
use sluice_tests::peers::{TANSU_NODE_ID, Tansu};

const POLICY: &str = "    filters:
      - type: topic-policy
        config:
          default: deny
          rules:
            - allow: [all]
              topics: [\"open.*\"]
            - allow: [consume, describe]
              topics: [\"ro.*\"]
";

const INVALID_REQUEST: i16 = 42;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const UNKNOWN_TOPIC_ID: i16 = 100;
const UNKNOWN_SERVER_ERROR: i16 = -1;

/// tansu with `open.a`, `ro.b` and `secret`, the proxy in front with
/// [`POLICY`]: the bootstrap address.
fn policed() -> (Tansu, Proxy, String) {
    let tansu = Tansu::start();
    for name in ["open.a", "ro.b", "secret"] {
        tansu.create_topic(name, 1);
    }
    let base = ports(2);
    let config = format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: edge\n    upstream: {{ bootstrapServers: [\"{}\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }}\n{POLICY}",
        tansu.addr,
        base + 1
    );
    let proxy = Proxy::start(&config);
    (tansu, proxy, format!("127.0.0.1:{base}"))
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_owned()))
}

fn metadata_request(topics: Option<&[&str]>) -> MetadataRequest {
    let mut r = MetadataRequest::default();
    r.topics = topics.map(|names| {
        let one = |n: &&str| {
            let mut t = metadata_request::MetadataRequestTopic::default();
            t.name = Some(name(n));
            t
        };
        names.iter().map(one).collect()
    });
    r
}

/// (name, error code) of each topic a Metadata answer lists, sorted.
fn listed(conn: &mut Conn, version: i16, topics: Option<&[&str]>) -> Vec<(String, i16)> {
    let r: MetadataResponse = conn.call(ApiKey::Metadata, version, &metadata_request(topics));
    let mut out: Vec<_> = r
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_ref().map(|n| n.to_string()).unwrap_or_default(),
                t.error_code,
            )
        })
        .collect();
    out.sort();
    out
}

/// A topic's id, asked of tansu directly.
fn topic_id(tansu: &Tansu, topic: &str) -> Uuid {
    let r: MetadataResponse =
        Conn::connect(&tansu.addr).call(ApiKey::Metadata, 12, &metadata_request(Some(&[topic])));
    r.topics[0].topic_id
}

/// The topics tansu itself knows.
fn on_broker(tansu: &Tansu) -> Vec<String> {
    let names = listed(&mut Conn::connect(&tansu.addr), 12, None);
    names.into_iter().map(|(n, _)| n).collect()
}

fn delete_state(topic: Option<&str>, id: Uuid) -> delete_topics_request::DeleteTopicState {
    let mut t = delete_topics_request::DeleteTopicState::default();
    t.name = topic.map(name);
    t.topic_id = id;
    t
}

#[test]
fn delete_topics_by_name_and_id_is_refused_and_by_id_judged_by_the_learned_name() {
    let (tansu, proxy, bootstrap) = policed();
    let secret = topic_id(&tansu, "secret");
    let mut conn = Conn::connect(&bootstrap);
    let mut delete = DeleteTopicsRequest::default();
    delete.timeout_ms = 5000;
    delete.topics = vec![delete_state(Some("open.a"), secret)];
    let r: DeleteTopicsResponse = conn.call(ApiKey::DeleteTopics, 6, &delete);
    let codes: Vec<i16> = r.responses.iter().map(|t| t.error_code).collect();
    assert_eq!(codes, [INVALID_REQUEST], "{r:?}");
    assert_eq!(
        r.responses[0].error_message.as_deref(),
        Some("You may not specify both topic name and topic id.")
    );
    // By id alone, not learned yet: UNKNOWN_TOPIC_ID; learned (from any
    // Metadata answer through the proxy): judged as `secret`.
    delete.topics = vec![delete_state(None, secret)];
    let r: DeleteTopicsResponse = conn.call(ApiKey::DeleteTopics, 6, &delete);
    assert_eq!(r.responses[0].error_code, UNKNOWN_TOPIC_ID, "{r:?}");
    listed(&mut conn, 12, None);
    let r: DeleteTopicsResponse = conn.call(ApiKey::DeleteTopics, 6, &delete);
    assert_eq!(
        r.responses[0].error_code, TOPIC_AUTHORIZATION_FAILED,
        "{r:?}"
    );
    assert_eq!(r.responses[0].topic_id, secret);
    assert_eq!(on_broker(&tansu), ["open.a", "ro.b", "secret"]);
    proxy.assert_clean_logs();
}

#[test]
fn metadata_naming_both_a_name_and_an_id_is_refused() {
    let (tansu, proxy, bootstrap) = policed();
    let secret = topic_id(&tansu, "secret");
    let mut request = metadata_request(Some(&["open.a"]));
    request.topics.as_mut().unwrap()[0].topic_id = secret;
    let mut conn = Conn::connect(&bootstrap);
    let r: MetadataResponse = conn.call(ApiKey::Metadata, 12, &request);
    let got: Vec<_> = r
        .topics
        .iter()
        .map(|t| (t.error_code, t.partitions.len()))
        .collect();
    assert_eq!(got, [(INVALID_REQUEST, 0)], "{r:?}");
    proxy.assert_clean_logs();
}

#[test]
fn metadata_answers_list_only_the_allowed_topics_asked_for() {
    let (_tansu, proxy, bootstrap) = policed();
    let mut conn = Conn::connect(&bootstrap);
    let all = [("open.a".to_owned(), 0), ("ro.b".to_owned(), 0)];
    for version in [1, 4, 9, 12] {
        // Kafka answers an empty list with no topic; tansu with every one.
        assert_eq!(listed(&mut conn, version, Some(&[])), [], "v{version}");
        let denied = [("secret".to_owned(), TOPIC_AUTHORIZATION_FAILED)];
        assert_eq!(
            listed(&mut conn, version, Some(&["secret"])),
            denied,
            "v{version}"
        );
        let named = listed(&mut conn, version, Some(&["secret", "ro.b"]));
        assert_eq!(named, [all[1].clone(), denied[0].clone()], "v{version}");
        assert_eq!(listed(&mut conn, version, None), all, "v{version}");
    }
    proxy.assert_clean_logs();
}

/// (name, error code) of each topic a DescribeTopicPartitions answer
/// lists, sorted.
fn described(conn: &mut Conn, topics: &[&str]) -> Vec<(String, i16)> {
    let mut request = DescribeTopicPartitionsRequest::default();
    request.response_partition_limit = 100;
    request.topics = (topics.iter())
        .map(|n| {
            let mut t = describe_topic_partitions_request::TopicRequest::default();
            t.name = name(n);
            t
        })
        .collect();
    let r: DescribeTopicPartitionsResponse =
        conn.call(ApiKey::DescribeTopicPartitions, 0, &request);
    let mut out: Vec<_> = (r.topics.iter())
        .map(|t| {
            (
                t.name.as_ref().map(|n| n.to_string()).unwrap_or_default(),
                t.error_code,
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn describe_topic_partitions_lists_only_the_allowed_topics_asked_for() {
    let (_tansu, proxy, bootstrap) = policed();
    let mut conn = Conn::connect(&bootstrap);
    // Kafka reads no topics as every topic (tansu as none): the answer
    // lists only what the client may describe.
    let all = described(&mut conn, &[]);
    assert!(
        all.iter().all(|(n, _)| n == "open.a" || n == "ro.b"),
        "{all:?}"
    );
    let named = described(&mut conn, &["secret", "ro.b"]);
    let want = [
        ("ro.b".to_owned(), 0),
        ("secret".to_owned(), TOPIC_AUTHORIZATION_FAILED),
    ];
    assert_eq!(named, want);
    proxy.assert_clean_logs();
}

/// tansu answers an OffsetFetch for every topic of a group (topics null)
/// from v2 to v7 without its topics array: it cannot be read.
const UNREADABLE: &str = "upstream answer not judged";

#[test]
fn offset_fetch_for_every_topic_is_answered_and_the_connection_kept() {
    let (_tansu, mut proxy, bootstrap) = policed();
    proxy.allow(UNREADABLE);
    let mut conn = Conn::connect(&bootstrap);
    let group = || GroupId(StrBytes::from_static_str("g"));
    for version in [2, 5, 7] {
        let mut request = OffsetFetchRequest::default();
        request.group_id = group();
        request.topics = None;
        let r: OffsetFetchResponse = conn.call(ApiKey::OffsetFetch, version, &request);
        assert_eq!(
            (r.error_code, r.topics.len()),
            (UNKNOWN_SERVER_ERROR, 0),
            "v{version}"
        );
    }
    let mut request = OffsetFetchRequest::default();
    let mut g = offset_fetch_request::OffsetFetchRequestGroup::default();
    g.group_id = group();
    g.topics = None;
    request.groups = vec![g];
    let r: OffsetFetchResponse = conn.call(ApiKey::OffsetFetch, 8, &request);
    let groups: Vec<_> = r
        .groups
        .iter()
        .map(|g| (g.error_code, g.topics.len()))
        .collect();
    assert_eq!(groups, [(0, 0)], "{r:?}");
    // The connection is still open: the next request is answered.
    assert_eq!(
        listed(&mut conn, 12, Some(&["ro.b"])),
        [("ro.b".to_owned(), 0)]
    );
    let warned = proxy
        .logs()
        .iter()
        .filter(|l| l.contains(UNREADABLE))
        .count();
    assert_eq!(warned, 3);
    proxy.assert_clean_logs();
}

fn txn_topic(topic: &str) -> add_partitions_to_txn_request::AddPartitionsToTxnTopic {
    let mut t = add_partitions_to_txn_request::AddPartitionsToTxnTopic::default();
    t.name = name(topic);
    t.partitions = vec![0, 1];
    t
}

#[test]
fn add_partitions_to_txn_v4_refused_names_the_error_on_every_partition() {
    let (_tansu, proxy, bootstrap) = policed();
    let mut conn = Conn::connect(&bootstrap);
    let mut txn = add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default();
    txn.transactional_id = TransactionalId(StrBytes::from_static_str("t"));
    txn.topics = vec![txn_topic("secret"), txn_topic("open.a")];
    let mut add = AddPartitionsToTxnRequest::default();
    add.transactions = vec![txn];
    let r: AddPartitionsToTxnResponse = conn.call(ApiKey::AddPartitionsToTxn, 4, &add);
    let codes: Vec<(String, String, i32, i16)> = r
        .results_by_transaction
        .iter()
        .flat_map(|x| x.topic_results.iter().map(move |t| (x, t)))
        .flat_map(|(x, t)| {
            t.results_by_partition.iter().map(move |p| {
                let ids = (x.transactional_id.to_string(), t.name.to_string());
                (ids.0, ids.1, p.partition_index, p.partition_error_code)
            })
        })
        .collect();
    let want = |topic: &str, p| {
        (
            "t".to_owned(),
            topic.to_owned(),
            p,
            TOPIC_AUTHORIZATION_FAILED,
        )
    };
    let want = [
        want("secret", 0),
        want("secret", 1),
        want("open.a", 0),
        want("open.a", 1),
    ];
    assert_eq!(codes, want, "{r:?}");

    assert_eq!(
        listed(&mut conn, 12, Some(&["ro.b"])),
        [("ro.b".to_owned(), 0)]
    );
    proxy.assert_clean_logs();
}

/// Brokers' APIs the policy refuses (cluster operations no rule names:
/// `holes_cluster`): each partition they name gets the error.
#[test]
fn brokers_apis_refused_name_the_error_on_every_partition() {
    let (_tansu, proxy, bootstrap) = policed();
    let mut conn = Conn::connect(&bootstrap);
    let mut dir = alter_replica_log_dirs_request::AlterReplicaLogDir::default();
    dir.path = StrBytes::from_static_str("/d");
    let mut topic = alter_replica_log_dirs_request::AlterReplicaLogDirTopic::default();
    topic.name = name("secret");
    topic.partitions = vec![0, 3];
    dir.topics = vec![topic];
    let mut alter = AlterReplicaLogDirsRequest::default();
    alter.dirs = vec![dir];
    let r: AlterReplicaLogDirsResponse = conn.call(ApiKey::AlterReplicaLogDirs, 2, &alter);
    let codes: Vec<_> = (r.results.iter())
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_name.to_string(), p.partition_index, p.error_code))
        })
        .collect();
    let secret = |p| ("secret".to_owned(), p, CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(codes, [secret(0), secret(3)], "{r:?}");

    let mut marker = write_txn_markers_request::WritableTxnMarker::default();
    marker.producer_id = ProducerId(7);
    let mut topic = write_txn_markers_request::WritableTxnMarkerTopic::default();
    topic.name = name("secret");
    topic.partition_indexes = vec![2];
    marker.topics = vec![topic];
    let mut write = WriteTxnMarkersRequest::default();
    write.markers = vec![marker];
    let r: WriteTxnMarkersResponse = conn.call(ApiKey::WriteTxnMarkers, 1, &write);
    let codes: Vec<_> = (r.markers.iter())
        .flat_map(|m| m.topics.iter().map(move |t| (m, t)))
        .flat_map(|(m, t)| {
            t.partitions.iter().map(move |p| {
                (
                    m.producer_id.0,
                    t.name.to_string(),
                    p.partition_index,
                    p.error_code,
                )
            })
        })
        .collect();
    assert_eq!(
        codes,
        [(7, "secret".to_owned(), 2, CLUSTER_AUTHORIZATION_FAILED)],
        "{r:?}"
    );
    assert_eq!(
        listed(&mut conn, 12, Some(&["ro.b"])),
        [("ro.b".to_owned(), 0)]
    );
    proxy.assert_clean_logs();
}
