//! Produce under a topic policy: one allowed topic streams as ever, a
//! denied one is answered, a mixed one split; a policy that lets every
//! client produce everywhere never looks past the header.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use tokio::io::AsyncWriteExt;

use super::policy::{OK_ONLY, body};
use super::*;

const V: i16 = 9;

fn produce(id: i32, names: &[&str], records: usize) -> Vec<u8> {
    let mut r = ProduceRequest::default();
    r.acks = -1;
    r.timeout_ms = 1000;
    for n in names {
        let mut t = produce_request::TopicProduceData::default();
        t.name = TopicName(StrBytes::from_string((*n).to_owned()));
        let mut p = produce_request::PartitionProduceData::default();
        p.records = Some(pattern(records));
        t.partition_data = vec![p];
        r.topic_data.push(t);
    }
    request(ApiKey::Produce, V, id, &r)
}

fn produced(names: &[&str]) -> ProduceResponse {
    let mut r = ProduceResponse::default();
    for n in names {
        let mut t = produce_response::TopicProduceResponse::default();
        t.name = TopicName(StrBytes::from_string((*n).to_owned()));
        let mut p = produce_response::PartitionProduceResponse::default();
        p.base_offset = 7;
        t.partition_responses = vec![p];
        r.responses.push(t);
    }
    r
}

fn results(frame: &[u8]) -> Vec<(String, i16)> {
    let r: ProduceResponse = body(frame, ApiKey::Produce, V, false);
    r.responses
        .iter()
        .map(|t| (t.name.to_string(), t.partition_responses[0].error_code))
        .collect()
}

const DENIED: &str = "sluice_policy_denied_total{cluster=\"orders\",operation=\"produce\",rule=\"default\",principal=\"\"}";

#[tokio::test]
async fn one_allowed_topic_streams_before_the_request_has_all_arrived() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    let frame = produce(1, &["ok-orders"], 4 << 20);
    let (head, rest) = frame.split_at(1 << 20);
    client.write_all(head).await.unwrap();
    // The upstream reads the start while the client still holds the rest.
    let mut start = vec![0u8; 64 * 1024];
    tokio::time::timeout(PATIENCE, upstream.read_exact(&mut start))
        .await
        .expect("streamed, not held")
        .unwrap();
    assert_eq!(start, frame[..start.len()]);
    client.write_all(rest).await.unwrap();
    let mut tail = vec![0u8; frame.len() - start.len()];
    upstream.read_exact(&mut tail).await.unwrap();
    assert_eq!(tail, frame[start.len()..]);
    assert_eq!(rig.metric(DENIED), 0.0);
}

#[tokio::test]
async fn a_denied_topic_is_answered_and_a_mixed_request_split() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    client
        .write_all(&produce(1, &["no-x"], 100_000))
        .await
        .unwrap();
    let mixed = produce(2, &["ok-a", "no-b"], 1000);
    client.write_all(&mixed).await.unwrap();
    // Only the allowed topic of the second goes upstream.
    let got = read_frame(&mut upstream).await;
    let forwarded: ProduceRequest = body(&got, ApiKey::Produce, V, true);
    let names: Vec<String> = forwarded
        .topic_data
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["ok-a"]);
    assert_eq!(correlation_of_request(&got), 2);
    upstream
        .write_all(&response(ApiKey::Produce, V, 2, &produced(&["ok-a"])))
        .await
        .unwrap();
    let first = read_frame(&mut client).await;
    assert_eq!(correlation(&first), 1);
    assert_eq!(results(&first), [("no-x".to_owned(), 29)]);
    let second = read_frame(&mut client).await;
    assert_eq!(correlation(&second), 2);
    assert_eq!(
        results(&second),
        [("ok-a".to_owned(), 0), ("no-b".to_owned(), 29)]
    );
    assert_eq!(rig.metric(DENIED), 2.0);
}

fn correlation_of_request(frame: &[u8]) -> i32 {
    i32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]])
}

#[tokio::test]
async fn produce_open_to_every_client_is_never_decoded() {
    let open_produce = "    filters:
      - type: topic-policy
        config:
          rules:
            - allow: [produce]
              topics: [\"*\"]
";
    let mut rig = Rig::start(open_produce).await;
    let (mut client, mut upstream) = rig.connection().await;
    // A Produce header over a body that is no Produce body at all: passed
    // as it came, because nothing past the header is read.
    let mut frame = produce(1, &["no-x"], 10)[..12].to_vec();
    frame.extend_from_slice(&[0, 4]);
    frame.extend_from_slice(b"test");
    frame.extend_from_slice(&[0xee; 500]);
    let len = i32::try_from(frame.len() - 4).unwrap();
    frame[..4].copy_from_slice(&len.to_be_bytes());
    client.write_all(&frame).await.unwrap();
    assert_eq!(read_frame(&mut upstream).await, frame);
}

#[tokio::test]
async fn a_split_produce_over_its_quota_carries_the_throttle_time() {
    let quota = "      - type: quota\n        config: { produceBytesPerSecond: 8000 }\n";
    let mut rig = Rig::start(&format!("{OK_ONLY}{quota}")).await;
    let (mut client, mut upstream) = rig.connection().await;
    // Some 11 kB against 8000 B/s: hundreds of ms past the second of
    // burst tolerance.
    client
        .write_all(&produce(1, &["ok-a", "no-b"], 5_500))
        .await
        .unwrap();
    read_frame(&mut upstream).await;
    upstream
        .write_all(&response(ApiKey::Produce, V, 1, &produced(&["ok-a"])))
        .await
        .unwrap();
    let got = read_frame(&mut client).await;
    assert_eq!(
        results(&got),
        [("ok-a".to_owned(), 0), ("no-b".to_owned(), 29)]
    );
    let throttle = body::<ProduceResponse>(&got, ApiKey::Produce, V, false).throttle_time_ms;
    assert!(
        (300..=450).contains(&throttle),
        "throttle_time_ms {throttle}"
    );
}

#[tokio::test]
async fn a_produce_the_proxy_answers_over_its_quota_carries_the_throttle_time() {
    let quota = "      - type: quota\n        config: { produceBytesPerSecond: 8000 }\n";
    let mut rig = Rig::start(&format!("{OK_ONLY}{quota}")).await;
    let (mut client, _upstream) = rig.connection().await;
    // Some 11 kB against 8000 B/s, every topic denied: the proxy answers.
    client
        .write_all(&produce(1, &["no-a", "no-b"], 5_500))
        .await
        .unwrap();
    let got = read_frame(&mut client).await;
    assert_eq!(
        results(&got),
        [("no-a".to_owned(), 29), ("no-b".to_owned(), 29)]
    );
    let throttle = body::<ProduceResponse>(&got, ApiKey::Produce, V, false).throttle_time_ms;
    assert!(
        (300..=450).contains(&throttle),
        "throttle_time_ms {throttle}"
    );
}
