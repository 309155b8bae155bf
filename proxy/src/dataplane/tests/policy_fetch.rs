//! Fetch under a topic policy: topics named by id (v13 on) judged by the
//! names the cluster's Metadata answers taught, an id not learned yet
//! answered UNKNOWN_TOPIC_ID; a Fetch of allowed and denied topics split,
//! the refused topics first in its response.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_kafka::policy::Uuid;
use tokio::io::AsyncWriteExt;

use super::policy::{OK_ONLY, body};
use super::*;

/// Fetch by topic id (and KIP-951's endpoints in the response).
const BY_ID: i16 = 16;
/// The last Fetch by name.
const BY_NAME: i16 = 12;

pub(super) fn name(n: &str) -> TopicName {
    TopicName(StrBytes::from_string(n.to_owned()))
}

/// A Fetch of partition 0 of each topic: by name, or by id where the name is "".
pub(super) fn fetch(id: i32, version: i16, topics: &[(&str, u128)]) -> Vec<u8> {
    let mut r = FetchRequest::default();
    r.max_wait_ms = 100;
    for (n, topic_id) in topics {
        let mut t = fetch_request::FetchTopic::default();
        t.topic = name(n);
        t.topic_id = Uuid::from_u128(*topic_id);
        t.partitions = vec![fetch_request::FetchPartition::default()];
        r.topics.push(t);
    }
    request(ApiKey::Fetch, version, id, &r)
}

/// The upstream's answer: records for each topic.
fn fetched(id: i32, version: i16, topics: &[(&str, u128)]) -> Vec<u8> {
    let mut r = FetchResponse::default();
    for (n, topic_id) in topics {
        let mut t = fetch_response::FetchableTopicResponse::default();
        t.topic = name(n);
        t.topic_id = Uuid::from_u128(*topic_id);
        let mut p = fetch_response::PartitionData::default();
        p.high_watermark = 5;
        p.records = Some(pattern(64));
        t.partitions = vec![p];
        r.responses.push(t);
    }
    response(ApiKey::Fetch, version, id, &r)
}

/// (name, id, error code, has records) per topic of a Fetch response.
fn topics(frame: &[u8], version: i16) -> Vec<(String, u128, i16, bool)> {
    let r: FetchResponse = body(frame, ApiKey::Fetch, version, false);
    r.responses
        .iter()
        .map(|t| {
            let p = &t.partitions[0];
            let records = p.records.as_ref().is_some_and(|r| !r.is_empty());
            let id = t.topic_id.as_u128();
            (t.topic.to_string(), id, p.error_code, records)
        })
        .collect()
}

fn by_id(id: u128, code: i16, records: bool) -> (String, u128, i16, bool) {
    (String::new(), id, code, records)
}

/// The client asks Metadata for every topic; the upstream knows "ok-a"
/// (id 1) and "no-b" (id 2).
pub(super) async fn learn_ids(client: &mut TcpStream, upstream: &mut TcpStream, id: i32) {
    let mut all = MetadataRequest::default();
    all.topics = None;
    client
        .write_all(&request(ApiKey::Metadata, 12, id, &all))
        .await
        .unwrap();
    read_frame(upstream).await;
    let mut answer = MetadataResponse::default();
    let mut broker = metadata_response::MetadataResponseBroker::default();
    broker.node_id = 1.into();
    broker.host = StrBytes::from_static_str("upstream.internal");
    broker.port = 9092;
    answer.brokers = vec![broker];
    for (n, topic_id) in [("ok-a", 1), ("no-b", 2)] {
        let mut t = metadata_response::MetadataResponseTopic::default();
        t.name = Some(name(n));
        t.topic_id = Uuid::from_u128(topic_id);
        answer.topics.push(t);
    }
    upstream
        .write_all(&response(ApiKey::Metadata, 12, id, &answer))
        .await
        .unwrap();
    let listed: MetadataResponse = body(&read_frame(client).await, ApiKey::Metadata, 12, false);
    assert_eq!(
        listed.topics.len(),
        1,
        "no-b is hidden, yet its id is learned"
    );
}

#[tokio::test]
async fn topics_named_by_id_are_judged_by_the_names_metadata_taught() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    // Not learned yet: UNKNOWN_TOPIC_ID, and nothing goes upstream.
    client
        .write_all(&fetch(1, BY_ID, &[("", 1)]))
        .await
        .unwrap();
    let unknown = read_frame(&mut client).await;
    assert_eq!(correlation(&unknown), 1);
    assert_eq!(topics(&unknown, BY_ID), [by_id(1, 100, false)]);

    learn_ids(&mut client, &mut upstream, 2).await;
    // Allowed by id: forwarded byte for byte, answered as it came.
    let allowed = fetch(3, BY_ID, &[("", 1)]);
    client.write_all(&allowed).await.unwrap();
    assert_eq!(read_frame(&mut upstream).await, allowed);
    let answer = fetched(3, BY_ID, &[("", 1)]);
    upstream.write_all(&answer).await.unwrap();
    assert_eq!(read_frame(&mut client).await, answer);

    // Denied by id: answered TOPIC_AUTHORIZATION_FAILED by the proxy.
    client
        .write_all(&fetch(4, BY_ID, &[("", 2)]))
        .await
        .unwrap();
    let denied = read_frame(&mut client).await;
    assert_eq!(correlation(&denied), 4);
    assert_eq!(topics(&denied, BY_ID), [by_id(2, 29, false)]);

    // All three: only the allowed id goes upstream; the answer merged.
    let mixed = fetch(5, BY_ID, &[("", 1), ("", 2), ("", 3)]);
    client.write_all(&mixed).await.unwrap();
    let sent: FetchRequest = body(&read_frame(&mut upstream).await, ApiKey::Fetch, BY_ID, true);
    let ids: Vec<u128> = sent.topics.iter().map(|t| t.topic_id.as_u128()).collect();
    assert_eq!(ids, [1]);
    upstream
        .write_all(&fetched(5, BY_ID, &[("", 1)]))
        .await
        .unwrap();
    let merged = read_frame(&mut client).await;
    assert_eq!(correlation(&merged), 5);
    // The refused first: put in as the response streams.
    assert_eq!(
        topics(&merged, BY_ID),
        [by_id(2, 29, false), by_id(3, 100, false), by_id(1, 0, true)]
    );
    let consume = "sluice_policy_denied_total{cluster=\"orders\",operation=\"consume\",rule=\"default\",principal=\"\"}";
    assert_eq!(rig.metric(consume), 2.0, "unknown ids are not denials");
}

#[tokio::test]
async fn a_fetch_of_allowed_and_denied_topics_is_split_and_merged() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    client
        .write_all(&fetch(1, BY_NAME, &[("ok-a", 0), ("no-b", 0)]))
        .await
        .unwrap();
    let sent = read_frame(&mut upstream).await;
    assert_eq!(
        sent,
        fetch(1, BY_NAME, &[("ok-a", 0)]),
        "re-encoded: ok-a only"
    );
    upstream
        .write_all(&fetched(1, BY_NAME, &[("ok-a", 0)]))
        .await
        .unwrap();
    let merged = read_frame(&mut client).await;
    assert_eq!(
        topics(&merged, BY_NAME),
        [("no-b".into(), 0, 29, false), ("ok-a".into(), 0, 0, true)]
    );
}

#[tokio::test]
async fn a_split_fetch_counts_against_the_fetch_quota() {
    let quota = "      - type: quota\n        config: { fetchBytesPerSecond: 100000000 }\n";
    let mut rig = Rig::start(&format!("{OK_ONLY}{quota}")).await;
    let (mut client, mut upstream) = rig.connection().await;
    client
        .write_all(&fetch(1, BY_NAME, &[("ok-a", 0), ("no-b", 0)]))
        .await
        .unwrap();
    read_frame(&mut upstream).await;
    let answer = fetched(1, BY_NAME, &[("ok-a", 0)]);
    upstream.write_all(&answer).await.unwrap();
    read_frame(&mut client).await;
    let bytes = "sluice_quota_bytes_total{cluster=\"orders\",client_id=\"test\",kind=\"fetch\"}";
    // Counted once written: awaited, not raced.
    let expected = answer.len() as f64;
    eventually("the upstream's response counted", || {
        rig.metric(bytes) >= expected
    })
    .await;
    assert_eq!(rig.metric(bytes), expected);
}

#[tokio::test]
async fn a_fetch_the_proxy_answers_counts_against_the_quota_and_carries_its_throttle_time() {
    let quota = "      - type: quota\n        config: { fetchBytesPerSecond: 10000 }\n";
    let mut rig = Rig::start(&format!("{OK_ONLY}{quota}")).await;
    let (mut client, _upstream) = rig.connection().await;
    // 400 denied topics: the proxy's answer alone is some 18 kB, some
    // 800 ms past the second of burst tolerance at 10 kB/s.
    let names: Vec<String> = (0..400).map(|i| format!("no-{i:03}")).collect();
    let asked: Vec<(&str, u128)> = names.iter().map(|n| (n.as_str(), 0)).collect();
    client.write_all(&fetch(1, BY_NAME, &asked)).await.unwrap();
    let got = read_frame(&mut client).await;
    let answered = topics(&got, BY_NAME);
    assert_eq!(answered.len(), 400);
    assert!(answered.iter().all(|(_, _, code, _)| *code == 29));
    let r: FetchResponse = body(&got, ApiKey::Fetch, BY_NAME, false);
    assert!(
        (700..=900).contains(&r.throttle_time_ms),
        "throttle_time_ms {} for a {}-byte answer",
        r.throttle_time_ms,
        got.len()
    );
}
