//! Issue 46's attacks at the codec: an entry naming a topic by name and by
//! id, answers listing what the request did not ask for (or what the
//! client may not see), and brokers' APIs refused where a client reads it.

use bytes::Bytes;
use kafka_protocol::messages::*;

use super::{body, keep, topic};
use crate::encode;
use crate::frame::request_header;
use crate::policy::{INVALID_REQUEST, Policed, TopicIds, UNKNOWN_TOPIC_ID, Uuid, police};

fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn police_with(frame: &Bytes, ids: &TopicIds) -> Policed {
    police(frame, &request_header(frame).unwrap(), ids, &mut keep).unwrap()
}

fn answered(policed: Policed) -> Bytes {
    match policed {
        Policed::Answer { frame, .. } => frame,
        other => panic!("answered by the proxy: {other:?}"),
    }
}

fn delete_v6(entries: &[(Option<&str>, u128)]) -> Bytes {
    let mut r = DeleteTopicsRequest::default();
    r.timeout_ms = 1;
    r.topics = (entries.iter())
        .map(|(name, n)| {
            let mut t = delete_topics_request::DeleteTopicState::default();
            t.name = name.map(topic);
            t.topic_id = id(*n);
            t
        })
        .collect();
    encode::request(ApiKey::DeleteTopics, 6, 3, "c", &r).unwrap()
}

/// (name, id, error code) per entry of a DeleteTopics answer.
fn deleted(frame: &Bytes) -> Vec<(Option<String>, u128, i16)> {
    let r: DeleteTopicsResponse = body(frame, ApiKey::DeleteTopics, 6, false);
    (r.responses.iter())
        .map(|t| {
            let name = t.name.as_ref().map(|n| n.to_string());
            (name, t.topic_id.as_u128(), t.error_code)
        })
        .collect()
}

#[test]
fn delete_topics_naming_a_topic_by_name_and_id_is_refused_never_forwarded() {
    let ids = TopicIds::default();
    ids.learn(&[(id(2), "secret".into()), (id(3), "ok-c".into())]);
    let frame = delete_v6(&[(Some("ok-a"), 2)]);
    let answer = answered(police_with(&frame, &ids));
    assert_eq!(
        deleted(&answer),
        [(Some("ok-a".into()), 2, INVALID_REQUEST)]
    );
    let r: DeleteTopicsResponse = body(&answer, ApiKey::DeleteTopics, 6, false);
    assert_eq!(
        r.responses[0].error_message.as_deref(),
        Some("You may not specify both topic name and topic id.")
    );
    // By id alone: judged by the learned name; unknown (or no id at all):
    // UNKNOWN_TOPIC_ID; the allowed one goes on by id.
    let frame = delete_v6(&[(None, 2), (None, 9), (None, 0), (None, 3)]);
    let Policed::Split {
        request: Some(sent),
        merge,
        denied: 1,
    } = police_with(&frame, &ids)
    else {
        panic!("split");
    };
    let forwarded: DeleteTopicsRequest = body(&sent, ApiKey::DeleteTopics, 6, true);
    let forwarded: Vec<_> = forwarded.topics.iter().map(|t| t.topic_id).collect();
    assert_eq!(forwarded, [id(3)]);
    // The broker's answer names the topic it deleted, and one more.
    let mut upstream = DeleteTopicsResponse::default();
    for (name, n) in [(Some("ok-c"), 3), (Some("ok-z"), 7)] {
        let mut t = delete_topics_response::DeletableTopicResult::default();
        t.name = name.map(topic);
        t.topic_id = id(n);
        upstream.responses.push(t);
    }
    let upstream = encode::response(ApiKey::DeleteTopics, 6, 3, &upstream).unwrap();
    let merged = merge.apply(&upstream, &mut keep).unwrap();
    assert_eq!(
        deleted(&merged),
        [
            (Some("ok-c".into()), 3, 0),
            (None, 2, 29),
            (None, 9, UNKNOWN_TOPIC_ID),
            (None, 0, UNKNOWN_TOPIC_ID),
        ]
    );
}

fn metadata(version: i16, names: Option<&[&str]>) -> Bytes {
    let mut r = MetadataRequest::default();
    r.topics = names.map(|names| {
        let one = |n: &&str| {
            let mut t = metadata_request::MetadataRequestTopic::default();
            t.name = Some(topic(n));
            t
        };
        names.iter().map(one).collect()
    });
    encode::request(ApiKey::Metadata, version, 4, "c", &r).unwrap()
}

/// tansu's answer to a Metadata naming no topic: every topic.
fn every_topic(version: i16) -> Bytes {
    let mut r = MetadataResponse::default();
    for (name, n) in [("ok-a", 1), ("secret", 2), ("ok-b", 3)] {
        let mut t = metadata_response::MetadataResponseTopic::default();
        t.name = Some(topic(name));
        t.topic_id = if version >= 10 { id(n) } else { Uuid::nil() };
        r.topics.push(t);
    }
    encode::response(ApiKey::Metadata, version, 4, &r).unwrap()
}

fn metadata_listed(frame: &Bytes, version: i16) -> Vec<(String, i16)> {
    let r: MetadataResponse = body(frame, ApiKey::Metadata, version, false);
    let name = |t: &metadata_response::MetadataResponseTopic| {
        t.name.as_ref().map(|n| n.to_string()).unwrap_or_default()
    };
    r.topics.iter().map(|t| (name(t), t.error_code)).collect()
}

/// The topics a Metadata names (`None`: every topic), and what its answer
/// lists.
type Case<'a> = (Option<&'a [&'a str]>, &'a [(&'a str, i16)]);

#[test]
fn metadata_answers_list_only_the_allowed_topics_asked_for() {
    let ids = TopicIds::default();
    for version in [1, 9, 12] {
        let cases: [Case; 4] = [
            (Some(&[]), &[]),
            (Some(&["secret"]), &[("secret", 29)]),
            (Some(&["ok-b", "secret"]), &[("ok-b", 0), ("secret", 29)]),
            (None, &[("ok-a", 0), ("ok-b", 0)]),
        ];
        for (names, want) in cases {
            let Policed::Split { merge, .. } = police_with(&metadata(version, names), &ids) else {
                panic!("v{version} {names:?}: forwarded, its answer judged");
            };
            let merged = merge.apply(&every_topic(version), &mut keep).unwrap();
            let want: Vec<_> = want.iter().map(|(n, c)| (n.to_string(), *c)).collect();
            assert_eq!(
                metadata_listed(&merged, version),
                want,
                "v{version} {names:?}"
            );
        }
    }
}

#[test]
fn metadata_naming_a_topic_by_name_and_id_is_refused() {
    let mut r = MetadataRequest::default();
    let mut t = metadata_request::MetadataRequestTopic::default();
    t.name = Some(topic("ok-a"));
    t.topic_id = id(2);
    r.topics = Some(vec![t]);
    let frame = encode::request(ApiKey::Metadata, 12, 4, "c", &r).unwrap();
    let Policed::Split {
        request: Some(sent),
        merge,
        denied: 0,
    } = police_with(&frame, &TopicIds::default())
    else {
        panic!("forwarded naming none");
    };
    let sent: MetadataRequest = body(&sent, ApiKey::Metadata, 12, true);
    assert_eq!(sent.topics, Some(vec![]));
    let merged = merge.apply(&every_topic(12), &mut keep).unwrap();
    assert_eq!(
        metadata_listed(&merged, 12),
        [("ok-a".to_owned(), INVALID_REQUEST)]
    );
}

#[test]
fn describe_topic_partitions_naming_none_lists_only_what_may_be_seen() {
    let mut r = DescribeTopicPartitionsRequest::default();
    r.response_partition_limit = 10;
    let frame = encode::request(ApiKey::DescribeTopicPartitions, 0, 4, "c", &r).unwrap();
    let Policed::Split {
        request: None,
        merge,
        ..
    } = police_with(&frame, &TopicIds::default())
    else {
        panic!("forwarded as it came");
    };
    let mut upstream = DescribeTopicPartitionsResponse::default();
    for name in ["ok-a", "secret"] {
        let mut t =
            describe_topic_partitions_response::DescribeTopicPartitionsResponseTopic::default();
        t.name = Some(topic(name));
        upstream.topics.push(t);
    }
    let mut cursor = describe_topic_partitions_response::Cursor::default();
    cursor.topic_name = topic("secret2");
    upstream.next_cursor = Some(cursor);
    let upstream = encode::response(ApiKey::DescribeTopicPartitions, 0, 4, &upstream).unwrap();
    let merged = merge.apply(&upstream, &mut keep).unwrap();
    let r: DescribeTopicPartitionsResponse =
        body(&merged, ApiKey::DescribeTopicPartitions, 0, false);
    let names: Vec<_> = r.topics.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, [Some(topic("ok-a"))]);
    assert_eq!(r.next_cursor, None, "the cursor would name a denied topic");
}

#[test]
fn an_all_allowed_request_has_its_answer_kept_to_what_it_asked() {
    let mut r = ListOffsetsRequest::default();
    let mut t = list_offsets_request::ListOffsetsTopic::default();
    t.name = topic("ok-a");
    r.topics = vec![t];
    let frame = encode::request(ApiKey::ListOffsets, 7, 4, "c", &r).unwrap();
    let Policed::Split {
        request: None,
        merge,
        ..
    } = police_with(&frame, &TopicIds::default())
    else {
        panic!("forwarded as it came");
    };
    let mut upstream = ListOffsetsResponse::default();
    for name in ["ok-a", "ok-b", "secret"] {
        let mut t = list_offsets_response::ListOffsetsTopicResponse::default();
        t.name = topic(name);
        upstream.topics.push(t);
    }
    let upstream = encode::response(ApiKey::ListOffsets, 7, 4, &upstream).unwrap();
    let merged = merge.apply(&upstream, &mut keep).unwrap();
    let r: ListOffsetsResponse = body(&merged, ApiKey::ListOffsets, 7, false);
    let names: Vec<_> = r.topics.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["ok-a"]);
}

#[test]
fn a_request_naming_no_topic_is_answered_by_the_proxy() {
    let frame = encode::request(
        ApiKey::ListOffsets,
        7,
        4,
        "c",
        &ListOffsetsRequest::default(),
    );
    let answer = answered(police_with(&frame.unwrap(), &TopicIds::default()));
    let r: ListOffsetsResponse = body(&answer, ApiKey::ListOffsets, 7, false);
    assert!(r.topics.is_empty());
}

#[test]
fn add_partitions_to_txn_v4_is_refused_on_every_partition() {
    let mut r = AddPartitionsToTxnRequest::default();
    let mut x = add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default();
    x.transactional_id = TransactionalId(kafka_protocol::protocol::StrBytes::from_static_str("t"));
    let mut t = add_partitions_to_txn_request::AddPartitionsToTxnTopic::default();
    t.name = topic("ok-a");
    t.partitions = vec![0, 1];
    x.topics = vec![t];
    r.transactions = vec![x];
    let frame = encode::request(ApiKey::AddPartitionsToTxn, 4, 4, "c", &r).unwrap();
    let answer = answered(police_with(&frame, &TopicIds::default()));
    let r: AddPartitionsToTxnResponse = body(&answer, ApiKey::AddPartitionsToTxn, 4, false);
    let codes: Vec<_> = (r.results_by_transaction.iter())
        .flat_map(|x| &x.topic_results)
        .flat_map(|t| &t.results_by_partition)
        .map(|p| (p.partition_index, p.partition_error_code))
        .collect();
    assert_eq!(codes, [(0, 29), (1, 29)]);
}
