//! Requests naming topics by id: Metadata (v10 on) goes on, and its answer,
//! which names them, refuses the denied ones without their names (no
//! UNKNOWN_TOPIC_ID for ids the proxy has not learned); Produce v13 is
//! judged by the names Metadata taught: a denied topic is never written,
//! one allowed topic streams as ever.

use kafka_protocol::messages::*;
use sluice_kafka::policy::Uuid;
use tokio::io::AsyncWriteExt;

use super::policy::{OK_ONLY, body};
use super::policy_fetch::{learn_ids, name};
use super::*;

fn metadata_by_id(id: i32, ids: &[u128]) -> Vec<u8> {
    let mut r = MetadataRequest::default();
    let topics = ids.iter().map(|n| {
        let mut t = metadata_request::MetadataRequestTopic::default();
        t.name = None;
        t.topic_id = Uuid::from_u128(*n);
        t
    });
    r.topics = Some(topics.collect());
    request(ApiKey::Metadata, 12, id, &r)
}

#[tokio::test]
async fn metadata_by_id_never_reveals_a_denied_topic() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    // No id learned yet: forwarded as it came, judged in the answer.
    let asked = metadata_by_id(1, &[1, 2, 9]);
    client.write_all(&asked).await.unwrap();
    assert_eq!(read_frame(&mut upstream).await, asked);
    let mut answer = MetadataResponse::default();
    for (n, id, code) in [(Some("ok-a"), 1, 0), (Some("no-b"), 2, 0), (None, 9, 100)] {
        let mut t = metadata_response::MetadataResponseTopic::default();
        t.name = n.map(name);
        t.topic_id = Uuid::from_u128(id);
        t.error_code = code;
        t.partitions = vec![metadata_response::MetadataResponsePartition::default()];
        answer.topics.push(t);
    }
    upstream
        .write_all(&response(ApiKey::Metadata, 12, 1, &answer))
        .await
        .unwrap();
    let got = read_frame(&mut client).await;
    assert!(
        !got.windows(4).any(|w| w == b"no-b"),
        "the denied name is never sent"
    );
    let r: MetadataResponse = body(&got, ApiKey::Metadata, 12, false);
    let seen: Vec<_> = r
        .topics
        .iter()
        .map(|t| {
            let n = t.name.as_ref().map(|n| n.to_string());
            (n, t.topic_id.as_u128(), t.error_code, t.partitions.len())
        })
        .collect();
    assert_eq!(
        seen,
        [
            (Some("ok-a".to_owned()), 1, 0, 1),
            (None, 2, 29, 0),
            (None, 9, 100, 1),
        ]
    );
}

fn produce_by_id(id: i32, ids: &[u128]) -> Vec<u8> {
    let mut r = ProduceRequest::default();
    r.acks = -1;
    r.timeout_ms = 1000;
    for n in ids {
        let mut t = produce_request::TopicProduceData::default();
        t.topic_id = Uuid::from_u128(*n);
        let mut p = produce_request::PartitionProduceData::default();
        p.records = Some(pattern(1000));
        t.partition_data = vec![p];
        r.topic_data.push(t);
    }
    request(ApiKey::Produce, 13, id, &r)
}

fn produced(id: i32, ids: &[u128]) -> Vec<u8> {
    let mut r = ProduceResponse::default();
    for n in ids {
        let mut t = produce_response::TopicProduceResponse::default();
        t.topic_id = Uuid::from_u128(*n);
        t.partition_responses = vec![produce_response::PartitionProduceResponse::default()];
        r.responses.push(t);
    }
    response(ApiKey::Produce, 13, id, &r)
}

/// (id, error code) per topic of a Produce v13 response.
fn results(frame: &[u8]) -> Vec<(u128, i16)> {
    let r: ProduceResponse = body(frame, ApiKey::Produce, 13, false);
    r.responses
        .iter()
        .map(|t| (t.topic_id.as_u128(), t.partition_responses[0].error_code))
        .collect()
}

#[tokio::test]
async fn produce_v13_by_id_is_judged_by_the_names_metadata_taught() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    learn_ids(&mut client, &mut upstream, 1).await;
    // One allowed id: forwarded byte for byte, answered as it came.
    let allowed = produce_by_id(2, &[1]);
    client.write_all(&allowed).await.unwrap();
    assert_eq!(read_frame(&mut upstream).await, allowed);
    upstream.write_all(&produced(2, &[1])).await.unwrap();
    assert_eq!(results(&read_frame(&mut client).await), [(1, 0)]);
    // Allowed, denied and unknown: only the allowed one is written.
    client
        .write_all(&produce_by_id(3, &[1, 2, 3]))
        .await
        .unwrap();
    let sent: ProduceRequest = body(&read_frame(&mut upstream).await, ApiKey::Produce, 13, true);
    let ids: Vec<u128> = sent
        .topic_data
        .iter()
        .map(|t| t.topic_id.as_u128())
        .collect();
    assert_eq!(ids, [1]);
    upstream.write_all(&produced(3, &[1])).await.unwrap();
    let got = read_frame(&mut client).await;
    assert_eq!(results(&got), [(1, 0), (2, 29), (3, 100)]);
    // Denied alone: answered by the proxy, nothing written.
    client.write_all(&produce_by_id(4, &[2])).await.unwrap();
    let got = read_frame(&mut client).await;
    assert_eq!(correlation(&got), 4);
    assert_eq!(results(&got), [(2, 29)]);
    let produce = "sluice_policy_denied_total{cluster=\"orders\",operation=\"produce\",rule=\"default\",principal=\"\"}";
    assert_eq!(rig.metric(produce), 2.0);
}
