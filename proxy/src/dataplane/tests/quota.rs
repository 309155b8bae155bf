//! The quota filter on live connections (KIP-219): a Produce over its quota
//! is answered at once with `throttle_time_ms`, and the connection's next
//! request is read only after that time; a per-client quota leaves other
//! client ids alone; a Fetch response's bytes count; a quota swapped in
//! place applies from the next request, without resetting what was
//! measured; connections over `connectionsPerSecond` are refused.
//!
//! Kafka measures over at least ten one-second windows: against 1000 B/s,
//! a first Produce frame of `10_000 + n` bytes earns about `n` ms.

use std::time::Instant;

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, ResponseHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::AsyncWriteExt;

use super::*;
use crate::dataplane::live::InPlace;

/// Produce v9 from `client_id`, a frame of exactly `total` bytes.
fn produce_as(client_id: &'static str, correlation_id: i32, total: usize) -> Vec<u8> {
    let frame = |records: usize| {
        let mut partition = PartitionProduceData::default();
        partition.records = Some(pattern(records));
        let mut topic = TopicProduceData::default();
        topic.name = StrBytes::from_static_str("orders").into();
        topic.partition_data = vec![partition];
        let mut body = ProduceRequest::default();
        body.acks = 1;
        body.timeout_ms = 1000;
        body.topic_data = vec![topic];
        sluice_kafka::encode::request(ApiKey::Produce, 9, correlation_id, client_id, &body)
            .unwrap()
            .to_vec()
    };
    let overhead = frame(1000).len() - 1000;
    let f = frame(total - overhead);
    assert_eq!(f.len(), total);
    f
}

/// The throttle time of a Produce v9 response frame.
fn throttle_ms(frame: &[u8]) -> i32 {
    let mut b = Bytes::copy_from_slice(&frame[4..]);
    ResponseHeader::decode(&mut b, 1).unwrap();
    ProduceResponse::decode(&mut b, 9).unwrap().throttle_time_ms
}

/// Sends `frame` (a Produce) on `client`, answers it upstream, and gives
/// the throttle time of the response the client read.
async fn produce_round(client: &mut TcpStream, upstream: &mut TcpStream, frame: &[u8]) -> i32 {
    let id = i32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]]);
    client.write_all(frame).await.unwrap();
    assert_eq!(read_frame(upstream).await, frame);
    let answer = response(ApiKey::Produce, 9, id, &ProduceResponse::default());
    upstream.write_all(&answer).await.unwrap();
    let got = read_frame(client).await;
    assert_eq!(correlation(&got), id);
    throttle_ms(&got)
}

fn quota(config: &str) -> String {
    format!("    filters:\n      - type: quota\n        config: {config}\n")
}

#[tokio::test]
async fn a_produce_over_quota_is_throttled_and_the_next_request_waits_it_out() {
    let mut rig = Rig::start(&quota("{ produceBytesPerSecond: 1000 }")).await;
    let (mut client, mut upstream) = rig.connection().await;
    let started = Instant::now();
    let throttle = produce_round(&mut client, &mut upstream, &produce_as("app", 1, 10_800)).await;
    assert!(
        (500..=800).contains(&throttle),
        "throttle_time_ms {throttle}, expected 800 less the time since the rig started"
    );
    let series = "sluice_throttle_seconds_total{cluster=\"orders\",kind=\"produce\"}";
    assert!((rig.metric(series) - f64::from(throttle) / 1000.0).abs() < 0.01);
    // Sent at once: the proxy reads it only when the throttle time is over.
    let next = produce_as("app", 2, 200);
    client.write_all(&next).await.unwrap();
    assert_eq!(read_frame(&mut upstream).await, next);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(throttle as u64),
        "the next request went upstream after {waited:?}, within the throttle time of {throttle} ms"
    );
    let bytes = "sluice_quota_bytes_total{cluster=\"orders\",client_id=\"app\",kind=\"produce\"}";
    assert_eq!(rig.metric(bytes), 11_000.0);
}

#[tokio::test]
async fn a_per_client_quota_leaves_a_second_client_id_unaffected() {
    let mut rig = Rig::start(&quota("{ perClientId: { produceBytesPerSecond: 1000 } }")).await;
    let (mut heavy, mut heavy_up) = rig.connection().await;
    let (mut light, mut light_up) = rig.connection().await;
    let throttle = produce_round(&mut heavy, &mut heavy_up, &produce_as("heavy", 1, 12_000)).await;
    assert!(throttle >= 1_900, "heavy: throttle_time_ms {throttle}");
    let muted_until = Instant::now() + Duration::from_millis(throttle as u64);
    // The other client id is neither throttled nor held, twice in a row.
    for id in 1..=2 {
        let frame = produce_as("light", id, 2_000);
        assert_eq!(produce_round(&mut light, &mut light_up, &frame).await, 0);
    }
    assert!(
        Instant::now() < muted_until,
        "the light client was held as long as the heavy one"
    );
}

#[tokio::test]
async fn a_fetch_response_counts_against_the_fetch_quota_carries_its_throttle_time_and_mutes() {
    let mut rig = Rig::start(&quota("{ fetchBytesPerSecond: 1000 }")).await;
    let (mut client, mut upstream) = rig.connection().await;
    let started = Instant::now();
    fetch_in_flight(&mut client, &mut upstream, 1).await;
    // 10.5 kB: about 500 ms over. A v12 head (no tagged fields in the
    // header, the broker's throttle_time_ms 0), then opaque bytes.
    let mut answer = opaque_response(1, 10_500);
    answer[8..13].copy_from_slice(&[0; 5]);
    upstream.write_all(&answer).await.unwrap();
    let got = read_frame(&mut client).await;
    let throttle_ms = i32::from_be_bytes([got[9], got[10], got[11], got[12]]);
    assert!(
        (200..=500).contains(&throttle_ms),
        "throttle_time_ms {throttle_ms}"
    );
    assert_eq!(got[..9], answer[..9]);
    assert_eq!(got[13..], answer[13..], "only throttle_time_ms is changed");
    fetch_in_flight(&mut client, &mut upstream, 2).await;
    let waited = started.elapsed();
    // 500 ms less the time since the rig started.
    let series = "sluice_throttle_seconds_total{cluster=\"orders\",kind=\"fetch\"}";
    let throttled = rig.metric(series);
    assert!((0.2..=0.5).contains(&throttled), "throttled {throttled} s");
    assert!(
        waited >= Duration::from_secs_f64(throttled),
        "the next Fetch went upstream after {waited:?}, within the {throttled} s throttle"
    );
    let bytes = "sluice_quota_bytes_total{cluster=\"orders\",client_id=\"test\",kind=\"fetch\"}";
    assert_eq!(rig.metric(bytes), 10_500.0);
}

#[tokio::test]
async fn a_quota_swapped_in_place_applies_from_the_next_request_and_keeps_its_usage() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    let upstream_addr = rig.cluster.config.upstream.bootstrap_servers[0].to_string();
    let with = |config: &str| cluster_config(upstream_addr.parse().unwrap(), &quota(config));
    let big = |id| produce_as("app", id, 10_800);
    // No quota: not throttled, not counted.
    assert_eq!(produce_round(&mut client, &mut upstream, &big(1)).await, 0);
    // In place: the same connection's next request is.
    let first = with("{ produceBytesPerSecond: 1000 }");
    rig.cluster.apply_in_place(InPlace::of(&first).unwrap());
    let throttle = produce_round(&mut client, &mut upstream, &big(2)).await;
    assert!(throttle >= 700, "throttle_time_ms {throttle}");
    // A changed quota keeps what was measured: 11 kB over about 11 s is
    // over 900 B/s (measured afresh, 200 B would not be).
    let second = with("{ produceBytesPerSecond: 900 }");
    rig.cluster.apply_in_place(InPlace::of(&second).unwrap());
    let small = produce_as("app", 3, 200);
    let throttle = produce_round(&mut client, &mut upstream, &small).await;
    assert!(throttle > 0, "usage was reset by the swap");
    // Removed in place: the next request is neither counted nor throttled.
    rig.cluster
        .apply_in_place(InPlace::of(&rig.cluster.config.clone()).unwrap());
    let after = produce_as("app", 4, 10_800);
    assert_eq!(produce_round(&mut client, &mut upstream, &after).await, 0);
    let bytes = "sluice_quota_bytes_total{cluster=\"orders\",client_id=\"app\",kind=\"produce\"}";
    assert_eq!(rig.metric(bytes), 11_000.0);
}

#[tokio::test]
async fn connections_over_the_connection_rate_are_closed_at_once_and_counted() {
    // One per second, over Kafka's ten windows: ten at once.
    let mut rig = Rig::start(&quota("{ connectionsPerSecond: 1 }")).await;
    let mut open = Vec::new();
    for _ in 0..10 {
        open.push(rig.connection().await);
    }
    let mut refused = rig.client().await;
    assert!(
        closed(&mut refused, PATIENCE).await,
        "the eleventh is refused"
    );
    let series = "sluice_connections_rejected_total{cluster=\"orders\",reason=\"connection_rate\"}";
    assert_eq!(rig.metric(series), 1.0);
    assert_eq!(
        rig.metric("sluice_connections_total{cluster=\"orders\"}"),
        10.0
    );
}
