//! A Fetch of allowed and denied topics streams like any other: the denied
//! topics' errors go first in its response, its records are spliced, its
//! endpoints rewritten (v16+), and the proxy holds no more than its chunks.
//! Its throttle time is the longer of the broker's and the quota's.

use kafka_protocol::messages::fetch_response::{
    FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, ResponseHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};
use sluice_kafka::policy::Uuid;
use tokio::io::AsyncWriteExt;

use super::policy::{OK_ONLY, body};
use super::policy_fetch::{fetch, learn_ids, name};
use super::*;
use crate::dataplane::direction::CHUNK;

const BIG: usize = 8 << 20;
/// What may be held for one busy connection: a chunk each way, and some.
const HELD_AT_MOST: u64 = 4 * CHUNK as u64;

/// The upstream's answer to the allowed part: `records` bytes of records
/// for "ok-a" (by name before v13, id 1 on), the broker's throttle time,
/// and from v16 a leader moved to node 2, named in the endpoints.
fn answer(version: i16, correlation_id: i32, records: usize, throttle_ms: i32) -> Vec<u8> {
    let mut data = PartitionData::default();
    data.high_watermark = 5;
    data.records = Some(pattern(records));
    let mut topic = FetchableTopicResponse::default();
    if version < 13 {
        topic.topic = name("ok-a");
    } else {
        topic.topic_id = Uuid::from_u128(1);
    }
    topic.partitions = vec![data];
    let mut body = FetchResponse::default();
    body.throttle_time_ms = throttle_ms;
    if version >= 16 {
        let mut gone = PartitionData::default();
        gone.partition_index = 1;
        gone.error_code = 6;
        let mut leader = LeaderIdAndEpoch::default();
        leader.leader_id = BrokerId(2);
        gone.current_leader = leader;
        topic.partitions.push(gone);
        let mut endpoint = NodeEndpoint::default();
        endpoint.node_id = BrokerId(2);
        endpoint.host = StrBytes::from_static_str("kafka-2.upstream");
        endpoint.port = 9092;
        body.node_endpoints = vec![endpoint];
    }
    body.responses = vec![topic];
    response(ApiKey::Fetch, version, correlation_id, &body)
}

/// The Fetch response in `frame`, decoded as the client does.
fn decoded(frame: &[u8], version: i16) -> FetchResponse {
    let mut buf = Bytes::copy_from_slice(&frame[4..]);
    ResponseHeader::decode(&mut buf, ApiKey::Fetch.response_header_version(version)).unwrap();
    let body = FetchResponse::decode(&mut buf, version).unwrap();
    assert!(buf.is_empty(), "the size prefix is the response's");
    body
}

/// Sends a Fetch of "ok-a" and "no-b" (by id from v13) and checks that only
/// "ok-a" goes upstream.
async fn mixed_fetch(client: &mut TcpStream, upstream: &mut TcpStream, version: i16, id: i32) {
    let (allowed, denied) = if version < 13 {
        (("ok-a", 0), ("no-b", 0))
    } else {
        (("", 1), ("", 2))
    };
    client
        .write_all(&fetch(id, version, &[allowed, denied]))
        .await
        .unwrap();
    let sent: FetchRequest = body(&read_frame(upstream).await, ApiKey::Fetch, version, true);
    assert_eq!(sent.topics.len(), 1, "only the allowed topic goes upstream");
}

/// The denied topic, as the client named it, with error 29, then the
/// allowed one with its records.
fn assert_denied_first(got: &FetchResponse, version: i16, records: usize) {
    let [denied, allowed] = &got.responses[..] else {
        panic!("two topics, got {}", got.responses.len());
    };
    if version < 13 {
        assert_eq!(
            (denied.topic.as_str(), allowed.topic.as_str()),
            ("no-b", "ok-a")
        );
    } else {
        assert_eq!(
            (denied.topic_id.as_u128(), allowed.topic_id.as_u128()),
            (2, 1)
        );
    }
    assert_eq!(denied.partitions[0].error_code, 29);
    assert_eq!(allowed.partitions[0].error_code, 0);
    assert!(allowed.partitions[0].records.as_deref() == Some(&pattern(records)[..]));
}

#[tokio::test]
async fn a_large_mixed_fetch_streams_with_the_denied_topic_first() {
    for version in [12, 16] {
        let mut rig = Rig::start(OK_ONLY).await;
        let (mut client, mut upstream) = rig.connection().await;
        if version >= 13 {
            learn_ids(&mut client, &mut upstream, 1).await;
        }
        mixed_fetch(&mut client, &mut upstream, version, 7).await;
        let frame = answer(version, 7, BIG, 0);
        let (head, rest) = frame.split_at(1 << 20);
        upstream.write_all(head).await.unwrap();
        let mut first = vec![0u8; head.len() / 2];
        tokio::time::timeout(PATIENCE, client.read_exact(&mut first))
            .await
            .expect("the response's first bytes reach the client before its last are sent")
            .unwrap();
        let rest = rest.to_vec();
        let sender = tokio::spawn(async move {
            upstream.write_all(&rest).await.unwrap();
            upstream
        });
        let size = i32::from_be_bytes([first[0], first[1], first[2], first[3]]) as usize;
        let read = first.len();
        first.resize(4 + size, 0);
        client.read_exact(&mut first[read..]).await.unwrap();
        sender.await.unwrap();

        let got = decoded(&first, version);
        assert_denied_first(&got, version, BIG);
        if version >= 16 {
            let endpoint = &got.node_endpoints[0];
            assert_eq!(
                (endpoint.host.as_str(), endpoint.port),
                ("proxy.test", 29094)
            );
            assert!(!first.windows(8).any(|w| w == b"upstream"));
        }
        let peak = rig.cluster.budget().peak();
        assert!(
            peak <= HELD_AT_MOST,
            "v{version}: {peak} bytes held for a mixed response of {BIG}"
        );
        let spliced = rig.cluster.metrics.spliced_to_client.get();
        assert!(
            spliced > (BIG - CHUNK) as u64,
            "v{version}: {spliced} bytes spliced"
        );
    }
}

#[tokio::test]
async fn a_small_mixed_fetch_is_answered_the_same_way_at_every_version() {
    // Held whole (v16+ up to a buffer, rewritten exactly) or streamed.
    for version in [4, 7, 11, 12, 13, 15, 16, 17, 18] {
        let mut rig = Rig::start(OK_ONLY).await;
        let (mut client, mut upstream) = rig.connection().await;
        if version >= 13 {
            learn_ids(&mut client, &mut upstream, 1).await;
        }
        mixed_fetch(&mut client, &mut upstream, version, 7).await;
        upstream
            .write_all(&answer(version, 7, 1000, 0))
            .await
            .unwrap();
        let got = decoded(&read_frame(&mut client).await, version);
        assert_denied_first(&got, version, 1000);
    }
}

#[tokio::test]
async fn a_split_fetch_carries_the_quota_throttle_time_or_the_brokers_if_longer() {
    let quota = "      - type: quota\n        config: { fetchBytesPerSecond: 8000 }\n";
    let mut rig = Rig::start(&format!("{OK_ONLY}{quota}")).await;
    let (mut client, mut upstream) = rig.connection().await;
    let version = 12;
    mixed_fetch(&mut client, &mut upstream, version, 1).await;
    // About 10.5 kB against 8000 B/s: some 300 ms past the second of
    // burst tolerance.
    upstream
        .write_all(&answer(version, 1, 10_400, 0))
        .await
        .unwrap();
    let got = decoded(&read_frame(&mut client).await, version);
    assert!(
        (250..=350).contains(&got.throttle_time_ms),
        "throttle_time_ms {}, the quota's",
        got.throttle_time_ms
    );
    assert_denied_first(&got, version, 10_400);
    // The broker's own, longer, is kept.
    mixed_fetch(&mut client, &mut upstream, version, 2).await;
    upstream
        .write_all(&answer(version, 2, 100, 60_000))
        .await
        .unwrap();
    let got = decoded(&read_frame(&mut client).await, version);
    assert_eq!(got.throttle_time_ms, 60_000);
}
