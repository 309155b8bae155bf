//! Fetch under a policy: split per topic, and topics named by id (v13 on)
//! judged by the names Metadata taught.

use bytes::Bytes;
use kafka_protocol::messages::*;

use super::{body, keep, topic};
use crate::encode;
use crate::frame::request_header;
use crate::policy::{Policed, TopicIds, Uuid, police};

fn fetch(topics: &[(&str, u128)]) -> FetchRequest {
    let mut r = FetchRequest::default();
    for (name, id) in topics {
        let mut t = fetch_request::FetchTopic::default();
        t.topic = topic(name);
        t.topic_id = Uuid::from_u128(*id);
        let mut p = fetch_request::FetchPartition::default();
        p.partition = 2;
        t.partitions = vec![p];
        r.topics.push(t);
    }
    r
}

fn police_with(frame: &Bytes, ids: &TopicIds) -> Policed {
    police(frame, &request_header(frame).unwrap(), ids, &mut keep).unwrap()
}

/// The upstream's answer to a Fetch of `topics`: no error, some records.
fn upstream(topics: &[(&str, u128)], version: i16) -> Bytes {
    let mut r = FetchResponse::default();
    for (name, id) in topics {
        let mut t = fetch_response::FetchableTopicResponse::default();
        t.topic = topic(name);
        t.topic_id = Uuid::from_u128(*id);
        let mut p = fetch_response::PartitionData::default();
        p.partition_index = 2;
        p.high_watermark = 10;
        p.records = Some(Bytes::from_static(b"records"));
        t.partitions = vec![p];
        r.responses.push(t);
    }
    encode::response(ApiKey::Fetch, version, 1, &r).unwrap()
}

/// (name, id, error code, has records) per topic of a Fetch response.
fn topics_of(frame: &Bytes, version: i16) -> Vec<(String, u128, i16, bool)> {
    let r: FetchResponse = body(frame, ApiKey::Fetch, version, false);
    r.responses
        .iter()
        .map(|t| {
            let p = &t.partitions[0];
            assert_eq!(p.partition_index, 2);
            let name = t.topic.to_string();
            let records = p.records.as_ref().is_some_and(|r| !r.is_empty());
            (name, t.topic_id.as_u128(), p.error_code, records)
        })
        .collect()
}

#[test]
fn a_fetch_of_allowed_and_denied_topics_is_split() {
    let frame = encode::request(
        ApiKey::Fetch,
        12,
        1,
        "c",
        &fetch(&[("ok-a", 0), ("no-b", 0)]),
    )
    .unwrap();
    let Policed::Split {
        request: Some(sent),
        merge,
        denied: 1,
    } = police_with(&frame, &TopicIds::default())
    else {
        panic!("split");
    };
    let forwarded: FetchRequest = body(&sent, ApiKey::Fetch, 12, true);
    assert_eq!(forwarded.topics.len(), 1);
    assert_eq!(forwarded.topics[0].topic.as_str(), "ok-a");
    let merged = merge
        .apply(&upstream(&[("ok-a", 0)], 12), &mut keep)
        .unwrap();
    assert_eq!(
        topics_of(&merged, 12),
        [("ok-a".into(), 0, 0, true), ("no-b".into(), 0, 29, false)]
    );
    // As it streams: the refused first, the response not held.
    let prepended = merge
        .prepended()
        .expect("a Fetch's refused topics go first");
    let streamed = prepended.insert(&upstream(&[("ok-a", 0)], 12)).unwrap();
    assert_eq!(
        topics_of(&streamed, 12),
        [("no-b".into(), 0, 29, false), ("ok-a".into(), 0, 0, true)]
    );
    // Every topic allowed: forwarded as it came.
    let frame = encode::request(ApiKey::Fetch, 12, 1, "c", &fetch(&[("ok-a", 0)])).unwrap();
    assert!(matches!(
        police_with(&frame, &TopicIds::default()),
        Policed::Forward
    ));
}

#[test]
fn topics_named_by_id_are_judged_by_their_learned_names() {
    let ids = TopicIds::default();
    ids.learn(&[
        (Uuid::from_u128(1), "ok-a".into()),
        (Uuid::from_u128(2), "no-b".into()),
    ]);
    let v = 16;
    let by_id = |t: &[u128]| {
        let named: Vec<(&str, u128)> = t.iter().map(|id| ("", *id)).collect();
        encode::request(ApiKey::Fetch, v, 1, "c", &fetch(&named)).unwrap()
    };
    assert!(matches!(police_with(&by_id(&[1]), &ids), Policed::Forward));

    let Policed::Split {
        request: Some(sent),
        merge,
        denied: 1,
    } = police_with(&by_id(&[1, 2, 3]), &ids)
    else {
        panic!("split");
    };
    let forwarded: FetchRequest = body(&sent, ApiKey::Fetch, v, true);
    let sent_ids: Vec<u128> = forwarded
        .topics
        .iter()
        .map(|t| t.topic_id.as_u128())
        .collect();
    assert_eq!(sent_ids, [1], "denied and unknown ids are never forwarded");
    let merged = merge.apply(&upstream(&[("", 1)], v), &mut keep).unwrap();
    assert_eq!(
        topics_of(&merged, v),
        [
            (String::new(), 1, 0, true),
            (String::new(), 2, 29, false),
            (String::new(), 3, 100, false),
        ]
    );

    let prepended = merge
        .prepended()
        .expect("a Fetch's refused topics go first");
    let streamed = prepended.insert(&upstream(&[("", 1)], v)).unwrap();
    assert_eq!(
        topics_of(&streamed, v),
        [
            (String::new(), 2, 29, false),
            (String::new(), 3, 100, false),
            (String::new(), 1, 0, true),
        ]
    );

    // Only unknown ids: answered UNKNOWN_TOPIC_ID, nothing denied.
    let Policed::Answer { frame, denied: 0 } = police_with(&by_id(&[3]), &ids) else {
        panic!("answered");
    };
    assert_eq!(topics_of(&frame, v), [(String::new(), 3, 100, false)]);
    // Denied by id: answered TOPIC_AUTHORIZATION_FAILED.
    let Policed::Answer { frame, denied: 1 } = police_with(&by_id(&[2]), &ids) else {
        panic!("answered");
    };
    assert_eq!(topics_of(&frame, v), [(String::new(), 2, 29, false)]);
}
