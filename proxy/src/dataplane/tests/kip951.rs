//! Fetch v16+ (KIP-951) through the proxy: a response larger than a chunk
//! streams (its first bytes reach the client before its last are sent, the
//! proxy holds no more than its chunks, the records are spliced), and the
//! broker endpoints at its end reach the client as the proxy's own. Whether
//! the client asked for v16 itself or the broker offers nothing older. A
//! small Produce v10 response passes as it came unless it names a broker.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::fetch_response::{
    FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData,
};
use kafka_protocol::messages::{
    ApiVersionsRequest, ApiVersionsResponse, BrokerId, FetchRequest, FetchResponse, ProduceRequest,
    ProduceResponse, ResponseHeader, produce_response,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::AsyncWriteExt;

use super::*;
use crate::dataplane::direction::CHUNK;

const BIG: usize = 8 << 20;
/// What may be held for one busy connection: a chunk each way, and some.
const HELD_AT_MOST: u64 = 4 * CHUNK as u64;

/// A Fetch response after a leader moved: partition 0 has `records` bytes
/// of records, partition 1 moved to node 2, whose upstream address is in
/// the endpoints at the end.
fn moved(version: i16, correlation_id: i32, records: usize) -> Vec<u8> {
    let mut endpoint = NodeEndpoint::default();
    endpoint.node_id = BrokerId(2);
    endpoint.host = StrBytes::from_static_str("kafka-2.upstream");
    endpoint.port = 9092;
    let mut leader = LeaderIdAndEpoch::default();
    leader.leader_id = BrokerId(2);
    leader.leader_epoch = 5;
    let mut gone = PartitionData::default();
    gone.partition_index = 1;
    gone.error_code = 6;
    gone.current_leader = leader;
    let mut data = PartitionData::default();
    data.records = Some(pattern(records));
    let mut topic = FetchableTopicResponse::default();
    topic.partitions = vec![data, gone];
    let mut body = FetchResponse::default();
    body.responses = vec![topic];
    body.node_endpoints = vec![endpoint];
    response(ApiKey::Fetch, version, correlation_id, &body)
}

/// The Fetch response in `frame`, decoded as the client does.
fn decode_fetch(frame: &[u8], version: i16) -> FetchResponse {
    let mut buf = Bytes::copy_from_slice(&frame[4..]);
    ResponseHeader::decode(&mut buf, 1).unwrap();
    let body = FetchResponse::decode(&mut buf, version).unwrap();
    assert!(buf.is_empty(), "the size prefix is the response's");
    body
}

#[tokio::test]
async fn a_fetch_v16_response_streams_and_names_the_new_leader_at_the_proxy() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    let fetch = request(ApiKey::Fetch, 16, 7, &FetchRequest::default());
    client.write_all(&fetch).await.unwrap();
    read_frame(&mut upstream).await;

    let frame = moved(16, 7, BIG);
    let (head, rest) = frame.split_at(1 << 20);
    upstream.write_all(head).await.unwrap();
    let mut first = vec![0u8; head.len() / 2];
    tokio::time::timeout(PATIENCE, client.read_exact(&mut first))
        .await
        .expect("the response's first bytes reach the client before its last are sent")
        .unwrap();
    // All but the size (grown by the reserve) as the broker sent it.
    assert_eq!(first[4..], head[4..first.len()]);

    let rest = rest.to_vec();
    let sender = tokio::spawn(async move {
        upstream.write_all(&rest).await.unwrap();
        upstream
    });
    let mut got = first;
    let read = got.len();
    let size = i32::from_be_bytes([got[0], got[1], got[2], got[3]]) as usize;
    got.resize(4 + size, 0);
    client.read_exact(&mut got[read..]).await.unwrap();
    sender.await.unwrap();

    let body = decode_fetch(&got, 16);
    let endpoint = &body.node_endpoints[..];
    assert_eq!(endpoint.len(), 1);
    assert_eq!(
        (
            endpoint[0].node_id.0,
            endpoint[0].host.as_str(),
            endpoint[0].port
        ),
        (2, "proxy.test", 29094),
        "the new leader, as the client must reach it: through the proxy"
    );
    assert_eq!(
        body.responses[0].partitions[1].current_leader.leader_id.0,
        2
    );
    assert!(body.responses[0].partitions[0].records.as_deref() == Some(&pattern(BIG)[..]));
    assert!(!got.windows(8).any(|w| w == b"upstream"));

    let peak = rig.cluster.budget().peak();
    assert!(
        peak <= HELD_AT_MOST,
        "{peak} bytes held for a streamed response of {BIG}"
    );
    let spliced = rig.cluster.metrics.spliced_to_client.get();
    assert!(spliced > (BIG - CHUNK) as u64, "{spliced} bytes spliced");
    // The upstream address is learned, for the client's next connection.
    let node = rig.cluster.node(2).expect("node 2 learned");
    assert_eq!((node.host.as_str(), node.port), ("kafka-2.upstream", 9092));
}

#[tokio::test]
async fn a_broker_with_only_fetch_v16_and_later_keeps_them_and_its_responses_stream() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    client
        .write_all(&request(
            ApiKey::ApiVersions,
            3,
            1,
            &ApiVersionsRequest::default(),
        ))
        .await
        .unwrap();
    read_frame(&mut upstream).await;
    let offered = |key: ApiKey, min, max| {
        let mut v = ApiVersion::default();
        v.api_key = key as i16;
        v.min_version = min;
        v.max_version = max;
        v
    };
    let mut versions = ApiVersionsResponse::default();
    versions.api_keys = vec![
        offered(ApiKey::Produce, 10, 11),
        offered(ApiKey::Fetch, 16, 17),
    ];
    upstream
        .write_all(&response(ApiKey::ApiVersions, 3, 1, &versions))
        .await
        .unwrap();
    let answer = read_frame(&mut client).await;
    let mut buf = Bytes::copy_from_slice(&answer[4..]);
    ResponseHeader::decode(&mut buf, 0).unwrap();
    let seen = ApiVersionsResponse::decode(&mut buf, 3).unwrap();
    let fetch = seen
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::Fetch as i16);
    assert_eq!(
        fetch.map(|k| (k.min_version, k.max_version)),
        Some((16, 17))
    );

    for (correlation_id, records) in [(2, BIG), (3, 6 << 20)] {
        let fetch = request(ApiKey::Fetch, 17, correlation_id, &FetchRequest::default());
        client.write_all(&fetch).await.unwrap();
        read_frame(&mut upstream).await;
        let frame = moved(17, correlation_id, records);
        upstream.write_all(&frame).await.unwrap();
        let got = read_frame(&mut client).await;
        let body = decode_fetch(&got, 17);
        assert_eq!(body.node_endpoints[0].host.as_str(), "proxy.test");
    }
    let peak = rig.cluster.budget().peak();
    assert!(
        peak <= HELD_AT_MOST,
        "{peak} bytes held for responses of {BIG}"
    );
    let budget = rig.cluster.budget();
    eventually("the idle connection gives every buffer back", || {
        budget.used() == 0
    })
    .await;
}

#[tokio::test]
async fn a_malformed_tail_closes_the_connection_with_a_reason() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    let fetch = request(ApiKey::Fetch, 16, 4, &FetchRequest::default());
    client.write_all(&fetch).await.unwrap();
    read_frame(&mut upstream).await;
    // More bytes after the response's tagged fields than any response may
    // have (`MAX_TRAILING_BYTES`), inside its frame.
    let mut frame = moved(16, 4, 200_000);
    frame.extend([0; 17]);
    let size = i32::try_from(frame.len() - 4).unwrap();
    frame[..4].copy_from_slice(&size.to_be_bytes());
    upstream.write_all(&frame).await.unwrap();
    assert!(
        closed(&mut client, PATIENCE).await,
        "the client's connection closes"
    );
    eventually("counted as a rewrite failure", || {
        rig.metric(
            "sluice_connections_closed_on_error_total{cluster=\"orders\",reason=\"rewrite\"}",
        ) == 1.0
    })
    .await;
}

/// A Produce v10 response: with an endpoint for node 2 when `moved`.
fn produced(correlation_id: i32, moved: bool) -> Vec<u8> {
    let mut body = ProduceResponse::default();
    if moved {
        let mut endpoint = produce_response::NodeEndpoint::default();
        endpoint.node_id = BrokerId(2);
        endpoint.host = StrBytes::from_static_str("kafka-2.upstream");
        endpoint.port = 9092;
        body.node_endpoints = vec![endpoint];
    }
    response(ApiKey::Produce, 10, correlation_id, &body)
}

#[tokio::test]
async fn a_produce_v10_response_passes_as_it_came_unless_it_names_a_broker() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    for (id, moved) in [(1, false), (2, true), (3, false)] {
        let produce = request(
            ApiKey::Produce,
            10,
            id,
            &ProduceRequest::default().with_acks(1),
        );
        client.write_all(&produce).await.unwrap();
        read_frame(&mut upstream).await;
        let sent = produced(id, moved);
        upstream.write_all(&sent).await.unwrap();
        let got = read_frame(&mut client).await;
        if !moved {
            assert_eq!(got, sent, "response {id}: as the broker sent it");
            continue;
        }
        let mut buf = Bytes::copy_from_slice(&got[4..]);
        ResponseHeader::decode(&mut buf, 1).unwrap();
        let body = ProduceResponse::decode(&mut buf, 10).unwrap();
        let endpoint = &body.node_endpoints[..];
        assert_eq!(
            endpoint
                .iter()
                .map(|e| (e.node_id.0, e.host.as_str(), e.port))
                .collect::<Vec<_>>(),
            vec![(2, "proxy.test", 29094)],
            "response {id}: the broker named as the client must reach it"
        );
    }
}
