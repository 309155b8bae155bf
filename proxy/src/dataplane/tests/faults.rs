//! The per-frame checks still close the connection, and only it, now that
//! frames stream.

use kafka_protocol::messages::{ApiKey, FetchRequest};
use tokio::io::AsyncWriteExt;

use super::streaming::produce;
use super::*;

#[tokio::test]
async fn a_streamed_request_that_stalls_is_cut_at_the_frame_timeout() {
    let mut rig = Rig::start("    limits: { frameTimeout: 300ms }\n").await;
    let (mut client, mut upstream) = rig.connection().await;
    let frame = produce(1, 1, 1 << 20);
    client.write_all(&frame[..200_000]).await.unwrap();
    // Part of it went upstream already; the rest never comes.
    let mut first = [0u8; 100_000];
    upstream.read_exact(&mut first).await.unwrap();
    assert!(closed(&mut client, Duration::from_secs(5)).await);
    assert!(closed(&mut upstream, Duration::from_secs(5)).await);
    assert_eq!(
        rig.metric(
            "sluice_connections_closed_on_error_total{cluster=\"orders\",reason=\"frame_timeout\"}"
        ),
        1.0
    );
    // Another connection is served.
    let (mut other, mut other_upstream) = rig.connection().await;
    let fetch = request(ApiKey::Fetch, 12, 1, &FetchRequest::default());
    other.write_all(&fetch).await.unwrap();
    assert_eq!(read_frame(&mut other_upstream).await, fetch);
    eventually("the stalled connection's memory is returned", || {
        rig.cluster.budget().used() <= 64 * 1024
    })
    .await;
}

#[tokio::test]
async fn a_streamed_response_the_client_does_not_take_is_cut_at_the_frame_timeout() {
    let mut rig = Rig::start("    limits: { frameTimeout: 300ms }\n").await;
    let (mut client, mut upstream) = rig.connection().await;
    fetch_in_flight(&mut client, &mut upstream, 1).await;
    // Far more than the sockets' buffers hold; the client reads none of it.
    let frame = opaque_response(1, 32 << 20);
    let sender = tokio::spawn(async move { upstream.write_all(&frame).await });
    let series =
        "sluice_connections_closed_on_error_total{cluster=\"orders\",reason=\"write_timeout\"}";
    eventually("the stalled write is cut", || rig.metric(series) == 1.0).await;
    // It was being spliced, and closing it closed the upstream side too.
    assert!(rig.cluster.metrics.spliced_to_client.get() > 0);
    assert!(sender.await.unwrap().is_err(), "the upstream's write fails");
    eventually("its memory is returned", || {
        rig.cluster.budget().used() == 0
    })
    .await;
    drop(client);
}

#[tokio::test]
async fn oversized_and_malformed_frames_close_the_connection() {
    let mut rig = Rig::start("    limits: { maxFrameBytes: 4096 }\n").await;
    let (mut client, _upstream) = rig.connection().await;
    client.write_all(&10_000i32.to_be_bytes()).await.unwrap();
    assert!(closed(&mut client, Duration::from_secs(5)).await);

    let (mut client, _upstream) = rig.connection().await;
    client.write_all(&(-5i32).to_be_bytes()).await.unwrap();
    assert!(closed(&mut client, Duration::from_secs(5)).await);

    // A response over the limit closes the connection before any of it is
    // passed on.
    let (mut client, mut upstream) = rig.connection().await;
    fetch_in_flight(&mut client, &mut upstream, 1).await;
    upstream
        .write_all(&opaque_response(1, 100_000)[..8])
        .await
        .unwrap();
    assert!(closed(&mut client, Duration::from_secs(5)).await);
    for reason in ["too_large", "malformed"] {
        let series = format!(
            "sluice_connections_closed_on_error_total{{cluster=\"orders\",reason=\"{reason}\"}}"
        );
        assert!(rig.metric(&series) >= 1.0, "{series}");
    }
}

#[tokio::test]
async fn a_response_to_the_wrong_request_closes_the_connection() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    fetch_in_flight(&mut client, &mut upstream, 1).await;
    upstream
        .write_all(&opaque_response(99, 1000))
        .await
        .unwrap();
    assert!(closed(&mut client, Duration::from_secs(5)).await);
    let series =
        "sluice_connections_closed_on_error_total{cluster=\"orders\",reason=\"upstream_protocol\"}";
    eventually("counted", || rig.metric(series) == 1.0).await;
}
