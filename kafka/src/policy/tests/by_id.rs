//! Metadata and Produce naming topics by id: a denied topic is never
//! revealed (its name) nor written, an allowed one goes on.

use bytes::Bytes;
use kafka_protocol::messages::*;

use super::{body, keep, topic};
use crate::encode;
use crate::frame::request_header;
use crate::policy::{Policed, TopicIds, Uuid, police};

fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn police_with(frame: &Bytes, ids: &TopicIds) -> Policed {
    police(frame, &request_header(frame).unwrap(), ids, &mut keep).unwrap()
}

fn metadata_by_id(ids: &[u128]) -> MetadataRequest {
    let mut r = MetadataRequest::default();
    let topics = ids.iter().map(|n| {
        let mut t = metadata_request::MetadataRequestTopic::default();
        t.name = None;
        t.topic_id = id(*n);
        t
    });
    r.topics = Some(topics.collect());
    r
}

/// The upstream's answer: each topic by name and id, with an error code.
fn metadata_answer(topics: &[(Option<&str>, u128, i16)]) -> MetadataResponse {
    let mut r = MetadataResponse::default();
    for (name, n, code) in topics {
        let mut t = metadata_response::MetadataResponseTopic::default();
        t.name = name.map(topic);
        t.topic_id = id(*n);
        t.error_code = *code;
        t.partitions = vec![metadata_response::MetadataResponsePartition::default()];
        r.topics.push(t);
    }
    r
}

/// (name, id, error code, partitions) per topic of a Metadata response.
fn metadata_topics(frame: &Bytes, version: i16) -> Vec<(Option<String>, u128, i16, usize)> {
    let r: MetadataResponse = body(frame, ApiKey::Metadata, version, false);
    r.topics
        .iter()
        .map(|t| {
            let name = t.name.as_ref().map(|n| n.to_string());
            (name, t.topic_id.as_u128(), t.error_code, t.partitions.len())
        })
        .collect()
}

#[test]
fn metadata_by_id_goes_on_and_its_answer_refuses_denied_names() {
    // Nothing learned: ids are judged by the names the answer gives them.
    let ids = TopicIds::default();
    let v = 12;
    let frame = encode::request(ApiKey::Metadata, v, 5, "c", &metadata_by_id(&[1, 2, 9])).unwrap();
    let Policed::Split {
        request: None,
        merge,
        denied: 0,
    } = police_with(&frame, &ids)
    else {
        panic!("forwarded as it came, its answer judged");
    };
    let answer = metadata_answer(&[(Some("ok-a"), 1, 0), (Some("secret"), 2, 0), (None, 9, 100)]);
    let upstream = encode::response(ApiKey::Metadata, v, 5, &answer).unwrap();
    let merged = merge.apply(&upstream, &mut keep).unwrap();
    assert_eq!(
        metadata_topics(&merged, v),
        [
            (Some("ok-a".to_owned()), 1, 0, 1),
            (None, 2, 29, 0),
            (None, 9, 100, 1),
        ]
    );
    assert!(!merged.windows(6).any(|w| w == b"secret"));
}

#[test]
fn metadata_by_id_before_v12_leaves_denied_topics_out() {
    // v10 and v11 may name topics by id only in requests; their answers
    // cannot carry a null name.
    let v = 11;
    let frame = encode::request(ApiKey::Metadata, v, 5, "c", &metadata_by_id(&[1, 2])).unwrap();
    let Policed::Split { merge, .. } = police_with(&frame, &TopicIds::default()) else {
        panic!("split");
    };
    let answer = metadata_answer(&[(Some("ok-a"), 1, 0), (Some("secret"), 2, 0)]);
    let upstream = encode::response(ApiKey::Metadata, v, 5, &answer).unwrap();
    let merged = merge.apply(&upstream, &mut keep).unwrap();
    assert_eq!(
        metadata_topics(&merged, v),
        [(Some("ok-a".to_owned()), 1, 0, 1)]
    );
}

fn produce_by_id(ids: &[u128]) -> ProduceRequest {
    let mut r = ProduceRequest::default();
    r.acks = -1;
    for n in ids {
        let mut t = produce_request::TopicProduceData::default();
        t.topic_id = id(*n);
        let mut p = produce_request::PartitionProduceData::default();
        p.index = 1;
        p.records = Some(Bytes::from_static(b"records"));
        t.partition_data = vec![p];
        r.topic_data.push(t);
    }
    r
}

/// (id, error code) per topic of a Produce v13 response.
fn produced(frame: &Bytes) -> Vec<(u128, i16)> {
    let r: ProduceResponse = body(frame, ApiKey::Produce, 13, false);
    r.responses
        .iter()
        .map(|t| (t.topic_id.as_u128(), t.partition_responses[0].error_code))
        .collect()
}

#[test]
fn produce_v13_is_judged_by_the_names_metadata_taught() {
    let ids = TopicIds::default();
    ids.learn(&[(id(1), "ok-a".into()), (id(2), "no-b".into())]);
    let frame = |t: &[u128]| encode::request(ApiKey::Produce, 13, 1, "c", &produce_by_id(t));
    let frame = |t: &[u128]| frame(t).unwrap();
    assert!(matches!(police_with(&frame(&[1]), &ids), Policed::Forward));
    let Policed::Split {
        request: Some(sent),
        merge,
        denied: 1,
    } = police_with(&frame(&[1, 2, 3]), &ids)
    else {
        panic!("split");
    };
    let forwarded: ProduceRequest = body(&sent, ApiKey::Produce, 13, true);
    assert_eq!(
        forwarded,
        produce_by_id(&[1]),
        "only the allowed id is written"
    );
    let mut answer = ProduceResponse::default();
    let mut t = produce_response::TopicProduceResponse::default();
    t.topic_id = id(1);
    let mut p = produce_response::PartitionProduceResponse::default();
    p.index = 1;
    t.partition_responses = vec![p];
    answer.responses = vec![t];
    let upstream = encode::response(ApiKey::Produce, 13, 1, &answer).unwrap();
    let merged = merge.apply(&upstream, &mut keep).unwrap();
    assert_eq!(produced(&merged), [(1, 0), (2, 29), (3, 100)]);
    // Every id denied: answered, nothing written.
    let Policed::Answer { frame, denied: 1 } = police_with(&frame(&[2]), &ids) else {
        panic!("answered");
    };
    assert_eq!(produced(&frame), [(2, 29)]);
}
