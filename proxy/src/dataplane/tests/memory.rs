//! What a connection holds once a large frame has passed, and what the
//! process-wide budget does when it is reached.

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ApiKey, FetchRequest, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use tokio::io::AsyncWriteExt;

use super::streaming::produce;
use super::*;

/// Produce v10 may carry endpoints, so its response is held whole to be
/// checked; this one has an error message of `len` bytes.
fn held_response(correlation_id: i32, len: usize) -> Vec<u8> {
    let mut partition = PartitionProduceResponse::default();
    partition.error_message = Some(StrBytes::from_string("e".repeat(len)));
    let mut topic = TopicProduceResponse::default();
    topic.partition_responses = vec![partition];
    let mut body = ProduceResponse::default();
    body.responses = vec![topic];
    response(ApiKey::Produce, 10, correlation_id, &body)
}

/// A Produce v10 that awaits its response.
fn produce_v10(correlation_id: i32) -> Vec<u8> {
    let mut body = ProduceRequest::default();
    body.acks = 1;
    request(ApiKey::Produce, 10, correlation_id, &body)
}

fn fetch_request(version: i16, correlation_id: i32) -> Vec<u8> {
    request(
        ApiKey::Fetch,
        version,
        correlation_id,
        &FetchRequest::default(),
    )
}

#[tokio::test]
async fn an_idle_connection_holds_nothing_after_large_frames() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    let budget = rig.cluster.budget();

    // A large request, streamed.
    let produce = produce(1, 1, 6 << 20);
    client.write_all(&produce).await.unwrap();
    assert!(read_frame(&mut upstream).await == produce);
    let answer = opaque_response(1, 100);
    upstream.write_all(&answer).await.unwrap();
    assert_eq!(read_frame(&mut client).await, answer);

    // A large response, streamed.
    client.write_all(&fetch_request(12, 2)).await.unwrap();
    read_frame(&mut upstream).await;
    let streamed = opaque_response(2, 6 << 20);
    upstream.write_all(&streamed).await.unwrap();
    assert!(read_frame(&mut client).await == streamed);

    // A large response, held whole.
    client.write_all(&produce_v10(3)).await.unwrap();
    read_frame(&mut upstream).await;
    let held = held_response(3, 6 << 20);
    upstream.write_all(&held).await.unwrap();
    assert!(read_frame(&mut client).await == held);
    let peak = budget.peak();
    assert!(
        peak >= held.len() as u64,
        "the held frame ({}) was charged: peak {peak}",
        held.len()
    );

    eventually("the idle connection gives every buffer back", || {
        budget.used() == 0
    })
    .await;
    assert_eq!(rig.metric("sluice_buffered_bytes"), 0.0);

    // And it still works.
    client.write_all(&fetch_request(12, 4)).await.unwrap();
    read_frame(&mut upstream).await;
    let small = opaque_response(4, 10);
    upstream.write_all(&small).await.unwrap();
    assert_eq!(read_frame(&mut client).await, small);
}

#[tokio::test]
async fn at_the_budget_connections_stop_reading_until_memory_is_released() {
    let metrics = Arc::new(Metrics::new());
    metrics.budget().set_limit(1 << 20);
    let mut rig = Rig::start_with(metrics, "").await;
    let budget = rig.cluster.budget();

    // A takes most of the budget: a held response of 1000 KiB, of which the
    // upstream sends only the start.
    let (mut a, mut a_upstream) = rig.connection().await;
    a.write_all(&produce_v10(1)).await.unwrap();
    read_frame(&mut a_upstream).await;
    let large = held_response(1, 1000 * 1024);
    let (start, rest) = large.split_at(100 * 1024);
    a_upstream.write_all(start).await.unwrap();
    eventually("A's frame is charged whole", || {
        budget.used() >= large.len() as u64
    })
    .await;

    // B's request needs a chunk: no room, so B is not read.
    let (mut b, mut b_upstream) = rig.connection().await;
    let b_request = fetch_request(12, 1);
    b.write_all(&b_request).await.unwrap();
    eventually("B's read waits for memory", || {
        rig.metric("sluice_buffered_reads_paused_total") >= 1.0
    })
    .await;
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(300), b_upstream.read(&mut byte)).await;
    assert!(early.is_err(), "B's request went upstream past the budget");

    // A's frame completes and is written: its memory goes, B goes on.
    a_upstream.write_all(rest).await.unwrap();
    assert!(read_frame(&mut a).await == large);
    assert_eq!(read_frame(&mut b_upstream).await, b_request);
    let answer = opaque_response(1, 50);
    b_upstream.write_all(&answer).await.unwrap();
    assert_eq!(read_frame(&mut b).await, answer);
    eventually("all memory returned", || budget.used() == 0).await;
    assert_eq!(rig.metric("sluice_max_buffered_bytes"), f64::from(1 << 20));
}
