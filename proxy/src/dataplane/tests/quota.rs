//! The quota filter on live connections: a Produce past its bucket's
//! second of burst tolerance carries `throttle_time_ms` (until the next
//! request conforms), and the next request is held, unread, until its
//! turn; a per-client quota leaves other client ids alone; a Fetch
//! response's bytes count and the next Fetch waits its turn; a quota
//! swapped in place applies from the next request, without resetting
//! what is owed; connections over `connectionsPerSecond` are refused.
//!
//! Against 10 kB/s, a first Produce frame of `10_000 + n` bytes earns
//! `n / 10` ms.

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
    // The records' length prefix grows with them: what is over comes off.
    let overhead = frame(1000).len() - 1000;
    let mut f = frame(total - overhead);
    if f.len() > total {
        f = frame(total - overhead - (f.len() - total));
    }
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

fn held(rig: &Rig, kind: &str) -> f64 {
    rig.metric(&format!(
        "sluice_quota_held_seconds_total{{cluster=\"orders\",kind=\"{kind}\"}}"
    ))
}

#[tokio::test]
async fn a_produce_past_the_burst_is_throttled_and_the_next_request_waits_its_turn() {
    let mut rig = Rig::start(&quota("{ produceBytesPerSecond: 10000 }")).await;
    let (mut client, mut upstream) = rig.connection().await;
    let started = Instant::now();
    let throttle = produce_round(&mut client, &mut upstream, &produce_as("app", 1, 15_000)).await;
    assert_eq!(throttle, 500, "until the bucket owes a second again");
    let series = "sluice_throttle_seconds_total{cluster=\"orders\",kind=\"produce\"}";
    assert!((rig.metric(series) - 0.5).abs() < 0.001);
    assert_eq!(held(&rig, "produce"), 0.0);
    // Sent at once, as by a client that ignores the throttle time: the
    // proxy forwards it only in its turn.
    let next = produce_as("app", 2, 200);
    client.write_all(&next).await.unwrap();
    assert_eq!(read_frame(&mut upstream).await, next);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(500),
        "the next request went upstream after {waited:?}, before its turn"
    );
    let held = held(&rig, "produce");
    assert!((0.4..=0.5).contains(&held), "held {held} s");
    let bytes = "sluice_quota_bytes_total{cluster=\"orders\",client_id=\"app\",kind=\"produce\"}";
    assert_eq!(rig.metric(bytes), 15_200.0);
}

#[tokio::test]
async fn a_per_client_quota_leaves_a_second_client_id_unaffected() {
    let mut rig = Rig::start(&quota("{ perClientId: { produceBytesPerSecond: 10000 } }")).await;
    let (mut heavy, mut heavy_up) = rig.connection().await;
    let (mut light, mut light_up) = rig.connection().await;
    let throttle = produce_round(&mut heavy, &mut heavy_up, &produce_as("heavy", 1, 25_000)).await;
    assert_eq!(throttle, 1_500, "heavy");
    let heavy_turn = Instant::now() + Duration::from_millis(throttle as u64);
    // The other client id is neither throttled nor held, twice in a row.
    for id in 1..=2 {
        let frame = produce_as("light", id, 2_000);
        assert_eq!(produce_round(&mut light, &mut light_up, &frame).await, 0);
    }
    assert!(
        Instant::now() < heavy_turn,
        "the light client was held as long as the heavy one"
    );
    assert_eq!(held(&rig, "produce"), 0.0);
}

#[tokio::test]
async fn a_fetch_response_counts_against_the_fetch_quota_and_the_next_fetch_waits_its_turn() {
    let mut rig = Rig::start(&quota("{ fetchBytesPerSecond: 10000 }")).await;
    let (mut client, mut upstream) = rig.connection().await;
    let started = Instant::now();
    fetch_in_flight(&mut client, &mut upstream, 1).await;
    // 15 kB: 500 ms past the second of tolerance. A v12 head (no tagged
    // fields in the header, the broker's throttle_time_ms 0), then opaque
    // bytes.
    let mut answer = opaque_response(1, 15_000);
    answer[8..13].copy_from_slice(&[0; 5]);
    upstream.write_all(&answer).await.unwrap();
    let got = read_frame(&mut client).await;
    let throttle_ms = i32::from_be_bytes([got[9], got[10], got[11], got[12]]);
    assert_eq!(throttle_ms, 500);
    assert_eq!(got[..9], answer[..9]);
    assert_eq!(got[13..], answer[13..], "only throttle_time_ms is changed");
    // Sent at once: forwarded in its turn.
    fetch_in_flight(&mut client, &mut upstream, 2).await;
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(500),
        "the next Fetch went upstream after {waited:?}, before its turn"
    );
    let series = "sluice_throttle_seconds_total{cluster=\"orders\",kind=\"fetch\"}";
    assert!((rig.metric(series) - 0.5).abs() < 0.001);
    let held = held(&rig, "fetch");
    assert!((0.3..=0.5).contains(&held), "held {held} s");
    let bytes = "sluice_quota_bytes_total{cluster=\"orders\",client_id=\"test\",kind=\"fetch\"}";
    assert_eq!(rig.metric(bytes), 15_000.0);
}

#[tokio::test]
async fn a_quota_swapped_in_place_applies_from_the_next_request_and_keeps_what_is_owed() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    let upstream_addr = rig.cluster.config.upstream.bootstrap_servers[0].to_string();
    let with = |config: &str| cluster_config(upstream_addr.parse().unwrap(), &quota(config));
    // No quota: not throttled, not counted.
    let free = produce_as("app", 1, 30_000);
    assert_eq!(produce_round(&mut client, &mut upstream, &free).await, 0);
    // In place: the same connection's next request is.
    let first = with("{ produceBytesPerSecond: 10000 }");
    rig.cluster.apply_in_place(InPlace::of(&first).unwrap());
    let big = produce_as("app", 2, 12_000);
    let throttle = produce_round(&mut client, &mut upstream, &big).await;
    assert_eq!(throttle, 200);
    // Halved: the 12 kB still owed take twice as long. Measured afresh,
    // 200 B would be neither held nor throttled.
    let second = with("{ produceBytesPerSecond: 5000 }");
    rig.cluster.apply_in_place(InPlace::of(&second).unwrap());
    let small = produce_as("app", 3, 200);
    let throttle = produce_round(&mut client, &mut upstream, &small).await;
    assert!(throttle > 0, "what was owed was forgotten by the swap");
    assert!(
        held(&rig, "produce") > 1.0,
        "held {} s",
        held(&rig, "produce")
    );
    // Removed in place: the next request is neither counted nor held.
    rig.cluster
        .apply_in_place(InPlace::of(&rig.cluster.config.clone()).unwrap());
    let after = produce_as("app", 4, 30_000);
    assert_eq!(produce_round(&mut client, &mut upstream, &after).await, 0);
    let bytes = "sluice_quota_bytes_total{cluster=\"orders\",client_id=\"app\",kind=\"produce\"}";
    assert_eq!(rig.metric(bytes), 12_200.0);
}

#[tokio::test]
async fn a_drain_interrupts_a_held_request() {
    let mut rig = Rig::start(&quota("{ produceBytesPerSecond: 1000 }")).await;
    let (mut client, mut upstream) = rig.connection().await;
    // A minute owed: the next request is held.
    produce_round(&mut client, &mut upstream, &produce_as("app", 1, 61_000)).await;
    client.write_all(&produce_as("app", 2, 200)).await.unwrap();
    eventually("the request is held", || held(&rig, "produce") > 0.0).await;
    rig.cluster.drain.set();
    assert!(
        closed(&mut client, PATIENCE).await,
        "the held connection was closed by the drain"
    );
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

#[tokio::test]
async fn a_request_held_when_the_quota_is_removed_passes_at_once() {
    let mut rig = Rig::start(&quota("{ produceBytesPerSecond: 1000 }")).await;
    let (mut client, mut upstream) = rig.connection().await;
    // A minute owed: the next request is held.
    produce_round(&mut client, &mut upstream, &produce_as("app", 1, 61_000)).await;
    let next = produce_as("app", 2, 200);
    client.write_all(&next).await.unwrap();
    eventually("the request is held", || held(&rig, "produce") > 0.0).await;
    let upstream_addr = rig.cluster.config.upstream.bootstrap_servers[0].to_string();
    let without = cluster_config(upstream_addr.parse().unwrap(), "");
    rig.cluster.apply_in_place(InPlace::of(&without).unwrap());
    // Well within the minute it was held for.
    assert_eq!(read_frame(&mut upstream).await, next);
}
