//! A reload's in-place change of `limits`: the generation and its open
//! connections stay, and each connection takes the new limits at its next
//! frame.

use kafka_protocol::messages::ProduceResponse;
use tokio::io::AsyncWriteExt;

use super::streaming::produce;
use super::*;
use crate::dataplane::live::InPlace;

/// Sends a Produce of `records` bytes on `client` and answers it upstream.
async fn round_trip(client: &mut TcpStream, upstream: &mut TcpStream, id: i32, records: usize) {
    let frame = produce(id, 1, records);
    client.write_all(&frame).await.unwrap();
    assert_eq!(read_frame(upstream).await, frame);
    let answer = response(ApiKey::Produce, 9, id, &ProduceResponse::default());
    upstream.write_all(&answer).await.unwrap();
    assert_eq!(read_frame(client).await, answer);
}

#[tokio::test]
async fn limits_changed_in_place_reach_open_connections_at_their_next_frame() {
    let mut rig = Rig::start("    limits: { maxConnections: 3, maxFrameBytes: 1048576 }\n").await;
    let (mut client, mut upstream) = rig.connection().await;
    round_trip(&mut client, &mut upstream, 1, 8192).await;

    let mut next = rig.cluster.config.clone();
    next.limits.max_connections = 1;
    next.limits.max_frame_bytes = 4096;
    rig.cluster.apply_in_place(InPlace::of(&next).unwrap());
    assert_eq!(rig.cluster.limits(), next.limits);

    // The open connection stays, and a frame within the new limit passes.
    round_trip(&mut client, &mut upstream, 2, 1024).await;
    // One connection is open: the lowered maxConnections refuses a second.
    let mut refused = rig.client().await;
    assert!(
        closed(&mut refused, PATIENCE).await,
        "over maxConnections: 1"
    );
    assert_eq!(
        rig.metric(
            "sluice_connections_rejected_total{cluster=\"orders\",reason=\"max_connections\"}"
        ),
        1.0
    );
    // The frame the connection passed before is now over maxFrameBytes.
    client.write_all(&produce(3, 1, 8192)).await.unwrap();
    assert!(
        closed(&mut client, PATIENCE).await,
        "over maxFrameBytes: 4096"
    );
    assert_eq!(
        rig.metric(
            "sluice_connections_closed_on_error_total{cluster=\"orders\",reason=\"too_large\"}"
        ),
        1.0
    );
    drop(upstream);
}

/// The filter chain swapped in place: the open connection's next request
/// is judged by the new chain, without a reconnect.
#[tokio::test]
async fn a_filter_chain_swapped_in_place_judges_the_next_request() {
    use super::backpressure::{DENY_DELETE_TOPICS, delete_topics};
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    client.write_all(&delete_topics(1)).await.unwrap();
    assert_eq!(
        read_frame(&mut upstream).await,
        delete_topics(1),
        "no filter: forwarded"
    );

    let upstream_addr = rig.cluster.config.upstream.bootstrap_servers[0].to_string();
    let next = cluster_config(upstream_addr.parse().unwrap(), DENY_DELETE_TOPICS);
    rig.cluster.apply_in_place(InPlace::of(&next).unwrap());
    client.write_all(&delete_topics(2)).await.unwrap();
    // The upstream's answer to the first, then the proxy's own to the second.
    let answer = response(
        ApiKey::DeleteTopics,
        4,
        1,
        &kafka_protocol::messages::DeleteTopicsResponse::default(),
    );
    upstream.write_all(&answer).await.unwrap();
    assert_eq!(read_frame(&mut client).await, answer);
    let denied = read_frame(&mut client).await;
    assert_eq!(correlation(&denied), 2);
    assert_eq!(
        rig.metric("sluice_denied_requests_total{cluster=\"orders\",api=\"DeleteTopics\"}"),
        1.0
    );
    // And back: the chain without the filter forwards again.
    rig.cluster
        .apply_in_place(InPlace::of(&rig.cluster.config.clone()).unwrap());
    client.write_all(&delete_topics(3)).await.unwrap();
    assert_eq!(read_frame(&mut upstream).await, delete_topics(3));
}
