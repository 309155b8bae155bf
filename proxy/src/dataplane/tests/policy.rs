//! A topic policy on a live connection: requests judged per topic, split,
//! answered and merged; Metadata filtered; the policy swapped in place.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::AsyncWriteExt;

use super::*;
use crate::dataplane::live::InPlace;

/// Every operation on topics starting with "ok"; nothing else.
pub(super) const OK_ONLY: &str = "    filters:
      - type: topic-policy
        config:
          rules:
            - allow: [all]
              topics: [\"ok*\"]
";

const V: i16 = 7;

fn topic(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

fn list_offsets(names: &[&str]) -> ListOffsetsRequest {
    let mut r = ListOffsetsRequest::default();
    for n in names {
        let mut t = list_offsets_request::ListOffsetsTopic::default();
        t.name = topic(n);
        t.partitions = vec![list_offsets_request::ListOffsetsPartition::default()];
        r.topics.push(t);
    }
    r
}

fn list_offsets_answer(names: &[&str]) -> ListOffsetsResponse {
    let mut r = ListOffsetsResponse::default();
    for n in names {
        let mut t = list_offsets_response::ListOffsetsTopicResponse::default();
        t.name = topic(n);
        let mut p = list_offsets_response::ListOffsetsPartitionResponse::default();
        p.offset = 42;
        t.partitions = vec![p];
        r.topics.push(t);
    }
    r
}

/// A frame's body as `T` (after a request or response header).
pub(super) fn body<T: Decodable>(frame: &[u8], api: ApiKey, version: i16, request: bool) -> T {
    let mut buf = Bytes::copy_from_slice(&frame[4..]);
    if request {
        RequestHeader::decode(&mut buf, api.request_header_version(version)).unwrap();
    } else {
        ResponseHeader::decode(&mut buf, api.response_header_version(version)).unwrap();
    }
    T::decode(&mut buf, version).unwrap()
}

/// (topic, error code) of each topic of a ListOffsets response.
fn offsets_errors(frame: &[u8]) -> Vec<(String, i16)> {
    let r: ListOffsetsResponse = body(frame, ApiKey::ListOffsets, V, false);
    r.topics
        .iter()
        .map(|t| (t.name.to_string(), t.partitions[0].error_code))
        .collect()
}

fn pairs(p: &[(&str, i16)]) -> Vec<(String, i16)> {
    p.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect()
}

const DENIED_DESCRIBE: &str = "sluice_policy_denied_total{cluster=\"orders\",operation=\"describe\",rule=\"default\",principal=\"\"}";

#[tokio::test]
async fn a_mixed_request_is_split_forwarded_and_merged() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    let sent = request(ApiKey::ListOffsets, V, 1, &list_offsets(&["ok-a", "no-b"]));
    client.write_all(&sent).await.unwrap();
    let got = read_frame(&mut upstream).await;
    let forwarded: ListOffsetsRequest = body(&got, ApiKey::ListOffsets, V, true);
    assert_eq!(forwarded, list_offsets(&["ok-a"]), "only the allowed topic");
    let answer = response(ApiKey::ListOffsets, V, 1, &list_offsets_answer(&["ok-a"]));
    upstream.write_all(&answer).await.unwrap();
    let merged = read_frame(&mut client).await;
    assert_eq!(correlation(&merged), 1);
    assert_eq!(offsets_errors(&merged), pairs(&[("ok-a", 0), ("no-b", 29)]));
    assert_eq!(rig.metric(DENIED_DESCRIBE), 1.0);
}

#[tokio::test]
async fn all_denied_is_answered_by_the_proxy_and_all_allowed_passes_byte_for_byte() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    let denied = request(ApiKey::ListOffsets, V, 1, &list_offsets(&["no-a", "no-b"]));
    let allowed = request(ApiKey::ListOffsets, V, 2, &list_offsets(&["ok-a", "ok-b"]));
    client.write_all(&denied).await.unwrap();
    client.write_all(&allowed).await.unwrap();
    // The first never reaches the upstream: the second is what it reads.
    assert_eq!(read_frame(&mut upstream).await, allowed);
    let answer = response(
        ApiKey::ListOffsets,
        V,
        2,
        &list_offsets_answer(&["ok-a", "ok-b"]),
    );
    upstream.write_all(&answer).await.unwrap();
    let first = read_frame(&mut client).await;
    assert_eq!(correlation(&first), 1);
    assert_eq!(offsets_errors(&first), pairs(&[("no-a", 29), ("no-b", 29)]));
    assert_eq!(read_frame(&mut client).await, answer, "passed as it came");
    assert_eq!(rig.metric(DENIED_DESCRIBE), 2.0);
}

fn metadata_answer(names: &[&str]) -> MetadataResponse {
    let mut r = MetadataResponse::default();
    let mut broker = metadata_response::MetadataResponseBroker::default();
    broker.node_id = 1.into();
    broker.host = StrBytes::from_static_str("upstream.internal");
    broker.port = 9092;
    r.brokers = vec![broker];
    for n in names {
        let mut t = metadata_response::MetadataResponseTopic::default();
        t.name = Some(topic(n));
        r.topics.push(t);
    }
    r
}

fn metadata_topics(frame: &[u8]) -> (Vec<(String, i16)>, String) {
    let r: MetadataResponse = body(frame, ApiKey::Metadata, 12, false);
    let topics = r
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_ref().map_or(String::new(), |n| n.to_string()),
                t.error_code,
            )
        })
        .collect();
    (topics, r.brokers[0].host.to_string())
}

#[tokio::test]
async fn metadata_hides_and_refuses_what_may_not_be_described() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    // Every topic: forwarded as it came, the answer filtered (and rewritten).
    let mut all = MetadataRequest::default();
    all.topics = None;
    let sent = request(ApiKey::Metadata, 12, 1, &all);
    client.write_all(&sent).await.unwrap();
    assert_eq!(read_frame(&mut upstream).await, sent);
    let answer = metadata_answer(&["ok-1", "secret", "ok-2"]);
    upstream
        .write_all(&response(ApiKey::Metadata, 12, 1, &answer))
        .await
        .unwrap();
    let (topics, host) = metadata_topics(&read_frame(&mut client).await);
    assert_eq!(topics, pairs(&[("ok-1", 0), ("ok-2", 0)]));
    assert_eq!(host, "proxy.test", "broker addresses rewritten as ever");

    // By name: the denied name is not asked upstream, and is refused.
    let mut named = MetadataRequest::default();
    named.topics = Some(
        ["ok-1", "secret"]
            .iter()
            .map(|n| {
                let mut t = metadata_request::MetadataRequestTopic::default();
                t.name = Some(topic(n));
                t
            })
            .collect(),
    );
    client
        .write_all(&request(ApiKey::Metadata, 12, 2, &named))
        .await
        .unwrap();
    let asked: MetadataRequest = body(&read_frame(&mut upstream).await, ApiKey::Metadata, 12, true);
    assert_eq!(asked.topics.unwrap().len(), 1);
    let answer = metadata_answer(&["ok-1"]);
    upstream
        .write_all(&response(ApiKey::Metadata, 12, 2, &answer))
        .await
        .unwrap();
    let (topics, _) = metadata_topics(&read_frame(&mut client).await);
    assert_eq!(topics, pairs(&[("ok-1", 0), ("secret", 29)]));
    // The proxy's own refusal is not an error the upstream answered.
    let errors = rig.metrics.encode();
    assert!(
        !errors.contains("TOPIC_AUTHORIZATION_FAILED"),
        "policy denials are not client-signal errors:\n{errors}"
    );
}

#[tokio::test]
async fn a_policy_swapped_in_place_judges_the_next_request() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    let first = request(ApiKey::ListOffsets, V, 1, &list_offsets(&["no-b"]));
    client.write_all(&first).await.unwrap();
    assert_eq!(
        read_frame(&mut upstream).await,
        first,
        "no policy: forwarded"
    );
    let answer = response(ApiKey::ListOffsets, V, 1, &list_offsets_answer(&["no-b"]));
    upstream.write_all(&answer).await.unwrap();
    assert_eq!(read_frame(&mut client).await, answer);

    let upstream_addr = rig.cluster.config.upstream.bootstrap_servers[0].to_string();
    let next = cluster_config(upstream_addr.parse().unwrap(), OK_ONLY);
    rig.cluster.apply_in_place(InPlace::of(&next).unwrap());
    client
        .write_all(&request(
            ApiKey::ListOffsets,
            V,
            2,
            &list_offsets(&["no-b"]),
        ))
        .await
        .unwrap();
    let refused = read_frame(&mut client).await;
    assert_eq!(offsets_errors(&refused), pairs(&[("no-b", 29)]));

    // Removed again: forwarded again, on the same connection.
    rig.cluster
        .apply_in_place(InPlace::of(&rig.cluster.config.clone()).unwrap());
    let third = request(ApiKey::ListOffsets, V, 3, &list_offsets(&["no-b"]));
    client.write_all(&third).await.unwrap();
    assert_eq!(read_frame(&mut upstream).await, third);
}
