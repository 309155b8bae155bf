//! Frames that need no rewrite pass through a chunk, both ways: the peer
//! gets their first bytes before the last ones are sent, and the proxy
//! never holds more than its chunks whatever the frame's size.

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use tokio::io::AsyncWriteExt;

use super::*;
use crate::dataplane::direction::CHUNK;

/// Produce v9 (its response carries no endpoints) with `acks` and a
/// payload of `records` bytes.
pub(super) fn produce(correlation_id: i32, acks: i16, records: usize) -> Vec<u8> {
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(pattern(records));
    let mut topic = TopicProduceData::default();
    topic.name = StrBytes::from_static_str("orders").into();
    topic.partition_data = vec![partition];
    let mut body = ProduceRequest::default();
    body.acks = acks;
    body.timeout_ms = 1000;
    body.topic_data = vec![topic];
    request(ApiKey::Produce, 9, correlation_id, &body)
}

const BIG: usize = 8 << 20;
/// What may be held for one busy connection: a chunk each way, and some.
const HELD_AT_MOST: u64 = 4 * CHUNK as u64;

#[tokio::test]
async fn a_large_request_streams_upstream_before_it_has_all_arrived() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    let frame = produce(1, 1, BIG);
    let (head, rest) = frame.split_at(1 << 20);
    client.write_all(head).await.unwrap();
    // The client has sent an eighth of the frame and waits.
    let mut first = vec![0u8; head.len() / 2];
    tokio::time::timeout(PATIENCE, upstream.read_exact(&mut first))
        .await
        .expect("the frame's first bytes reach the upstream before its last are sent")
        .unwrap();
    assert_eq!(first, head[..first.len()]);

    let rest = rest.to_vec();
    let sender = tokio::spawn(async move {
        client.write_all(&rest).await.unwrap();
        client
    });
    let mut got = vec![0u8; frame.len() - first.len()];
    upstream.read_exact(&mut got).await.unwrap();
    assert!(got == frame[first.len()..], "the frame arrives intact");
    let mut client = sender.await.unwrap();

    let answer = response(ApiKey::Produce, 9, 1, &ProduceResponse::default());
    upstream.write_all(&answer).await.unwrap();
    assert_eq!(read_frame(&mut client).await, answer);
    let peak = rig.cluster.budget().peak();
    assert!(
        peak <= HELD_AT_MOST,
        "{peak} bytes held for a streamed frame of {BIG}"
    );
    assert_spliced(rig.cluster.metrics.spliced_to_upstream.get(), frame.len());
}

/// Between two plaintext sockets, a large frame's body is spliced: all of
/// it but the part read with its head.
fn assert_spliced(spliced: u64, frame: usize) {
    let frame = frame as u64;
    assert!(
        spliced > frame - CHUNK as u64 && spliced <= frame,
        "{spliced} of a frame of {frame} bytes spliced"
    );
}

#[tokio::test]
async fn a_large_response_streams_to_the_client_before_it_has_all_arrived() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    // Fetch v12: its response carries no endpoints.
    fetch_in_flight(&mut client, &mut upstream, 7).await;
    let frame = opaque_response(7, BIG);
    let (head, rest) = frame.split_at(1 << 20);
    upstream.write_all(head).await.unwrap();
    let mut first = vec![0u8; head.len() / 2];
    tokio::time::timeout(PATIENCE, client.read_exact(&mut first))
        .await
        .expect("the response's first bytes reach the client before its last are sent")
        .unwrap();
    assert_eq!(first, head[..first.len()]);

    let rest = rest.to_vec();
    let sender = tokio::spawn(async move {
        upstream.write_all(&rest).await.unwrap();
        upstream
    });
    let mut got = vec![0u8; frame.len() - first.len()];
    client.read_exact(&mut got).await.unwrap();
    assert!(got == frame[first.len()..], "the response arrives intact");
    sender.await.unwrap();
    let peak = rig.cluster.budget().peak();
    assert!(
        peak <= HELD_AT_MOST,
        "{peak} bytes held for a streamed frame of {BIG}"
    );
    assert_spliced(rig.cluster.metrics.spliced_to_client.get(), frame.len());
}

#[tokio::test]
async fn produce_with_acks_zero_streams_without_a_slot() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    // acks=0 gets no answer: the Metadata request after it gets the next.
    let fire_and_forget = produce(1, 0, 300_000);
    client.write_all(&fire_and_forget).await.unwrap();
    let metadata = request(
        ApiKey::Metadata,
        12,
        2,
        &kafka_protocol::messages::MetadataRequest::default(),
    );
    client.write_all(&metadata).await.unwrap();
    assert!(read_frame(&mut upstream).await == fire_and_forget);
    assert_eq!(read_frame(&mut upstream).await, metadata);
    let answer = opaque_response(2, 64);
    // Metadata is rewritten: an opaque answer would not decode, so answer
    // with a real one.
    let real = response(
        ApiKey::Metadata,
        12,
        2,
        &kafka_protocol::messages::MetadataResponse::default(),
    );
    drop(answer);
    upstream.write_all(&real).await.unwrap();
    let got = read_frame(&mut client).await;
    assert_eq!(correlation(&got), 2);
}
