//! A client that pipelines requests the proxy answers itself, without
//! reading the answers, behind a request the upstream is slow to answer:
//! nothing pushes back but the in-flight cap.

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, DeleteTopicsRequest,
};
use kafka_protocol::protocol::StrBytes;
use tokio::io::AsyncWriteExt;

use super::*;
use crate::dataplane::direction::MAX_IN_FLIGHT;

pub(super) const DENY_DELETE_TOPICS: &str = "    filters:
      - type: deny-apis
        config: { apis: [DeleteTopics] }
";

pub(super) fn delete_topics(correlation_id: i32) -> Vec<u8> {
    let mut body = DeleteTopicsRequest::default();
    body.topic_names = vec![StrBytes::from_static_str("orders").into()];
    body.timeout_ms = 1000;
    request(ApiKey::DeleteTopics, 4, correlation_id, &body)
}

#[tokio::test]
async fn pipelined_denied_requests_stop_being_read_at_the_in_flight_cap() {
    let mut rig = Rig::start(DENY_DELETE_TOPICS).await;
    let (client, mut upstream) = rig.connection().await;
    let (mut from_proxy, mut to_proxy) = client.into_split();
    to_proxy
        .write_all(&request(
            ApiKey::ApiVersions,
            3,
            0,
            &ApiVersionsRequest::default(),
        ))
        .await
        .unwrap();
    // The upstream has it, and sits on it.
    let api_versions = read_frame(&mut upstream).await;
    assert_eq!(api_versions[4..6], [0, ApiKey::ApiVersions as u8]);

    let sent = 5 * MAX_IN_FLIGHT as i32;
    let writer = tokio::spawn(async move {
        for id in 1..=sent {
            to_proxy.write_all(&delete_topics(id)).await.unwrap();
        }
        to_proxy
    });
    let series = "sluice_denied_requests_total{cluster=\"orders\",api=\"DeleteTopics\"}";
    let read = settled(Duration::from_millis(300), || rig.metric(series)).await;
    assert!(
        read <= (MAX_IN_FLIGHT - 1) as f64,
        "the proxy read {read} denied requests behind one unanswered request; at most {} may wait",
        MAX_IN_FLIGHT - 1
    );
    // What is held for them is their answers, small, and one chunk.
    let held = rig.cluster.budget().used();
    assert!(held < 256 * 1024, "{held} bytes held for {read} answers");

    // The upstream answers; the client reads: every request is answered,
    // in order, and the proxy read them all.
    let mut answer = ApiVersionsResponse::default();
    answer.error_code = 0;
    upstream
        .write_all(&response(ApiKey::ApiVersions, 3, 0, &answer))
        .await
        .unwrap();
    let mut from_proxy = tokio::io::BufReader::new(&mut from_proxy);
    for expected in 0..=sent {
        let mut len = [0u8; 4];
        tokio::time::timeout(PATIENCE, from_proxy.read_exact(&mut len))
            .await
            .expect("answers keep coming")
            .unwrap();
        let mut rest = vec![0u8; i32::from_be_bytes(len) as usize];
        from_proxy.read_exact(&mut rest).await.unwrap();
        let id = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        assert_eq!(id, expected, "answers come in request order");
    }
    writer.await.unwrap();
    assert_eq!(rig.metric(series), f64::from(sent));
    eventually("every answer's memory is returned", || {
        rig.cluster.budget().used() == 0
    })
    .await;
}

/// Answers of its own that are large (a request naming many topics) hold
/// their slots by size: what waits for the client stays bounded in bytes.
#[tokio::test]
async fn large_answers_of_its_own_are_bounded_in_bytes() {
    let mut rig = Rig::start(DENY_DELETE_TOPICS).await;
    let (client, mut upstream) = rig.connection().await;
    let (_from_proxy, mut to_proxy) = client.into_split();
    to_proxy
        .write_all(&request(
            ApiKey::ApiVersions,
            3,
            0,
            &ApiVersionsRequest::default(),
        ))
        .await
        .unwrap();
    read_frame(&mut upstream).await;
    let mut body = DeleteTopicsRequest::default();
    body.topic_names = (0..200)
        .map(|i| StrBytes::from_string(format!("topic-number-{i:04}")).into())
        .collect();
    body.timeout_ms = 1000;
    let one = request(ApiKey::DeleteTopics, 4, 1, &body);
    let writer = tokio::spawn(async move {
        for _ in 0..2000 {
            if to_proxy.write_all(&one).await.is_err() {
                return;
            }
        }
    });
    let series = "sluice_denied_requests_total{cluster=\"orders\",api=\"DeleteTopics\"}";
    let read = settled(Duration::from_millis(300), || rig.metric(series)).await;
    let held = rig.cluster.budget().used();
    // Each answer is some 5 KiB: about 20 slots.
    assert!(read < 100.0, "{read} large answers wait behind one request");
    assert!(
        held <= 256 * 1024 + 2 * 64 * 1024,
        "{held} bytes held for answers waiting their turn"
    );
    writer.abort();
}
