//! Policing, per API: what goes on, what is answered, what is merged.

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, StrBytes};
use sluice_config::policy::API_OPERATIONS;

use super::*;
use crate::encode;

mod by_id;
mod docs;
mod fetch;
mod holes;
use crate::frame::request_header;

fn topic(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

/// Topics starting with "ok" are allowed, and the cluster (the configs
/// APIs' other resources).
fn keep(name: &str) -> bool {
    name.starts_with("ok") || name == crate::cluster::CLUSTER_RESOURCE
}

fn police_frame(frame: &Bytes) -> Policed {
    let header = request_header(frame).unwrap();
    police(frame, &header, &TopicIds::default(), &mut keep).unwrap()
}

/// The body of a frame (prefix included) as `T`, after its header.
fn body<T: Decodable>(frame: &Bytes, api: ApiKey, version: i16, request: bool) -> T {
    let mut buf = frame.slice(4..);
    if request {
        KHeader::decode(&mut buf, api.request_header_version(version)).unwrap();
    } else {
        ResponseHeader::decode(&mut buf, api.response_header_version(version)).unwrap();
    }
    T::decode(&mut buf, version).unwrap()
}

fn list_offsets(names: &[&str]) -> ListOffsetsRequest {
    let mut r = ListOffsetsRequest::default();
    r.topics = names
        .iter()
        .map(|n| {
            let mut t = list_offsets_request::ListOffsetsTopic::default();
            t.name = topic(n);
            let mut p = list_offsets_request::ListOffsetsPartition::default();
            p.partition_index = 3;
            t.partitions = vec![p];
            t
        })
        .collect();
    r
}

const V: i16 = 7;

#[test]
fn every_api_that_names_topics_is_policed() {
    for (key, _) in API_OPERATIONS {
        assert!(policed(*key), "{}", crate::api_name(*key));
    }
    assert!(!policed(ApiKey::ApiVersions as i16));
}

#[test]
fn all_allowed_goes_on_as_it_came_and_its_answer_is_judged() {
    let frame = encode::request(
        ApiKey::ListOffsets,
        V,
        9,
        "c",
        &list_offsets(&["ok-a", "ok-b"]),
    )
    .unwrap();
    assert!(matches!(
        police_frame(&frame),
        Policed::Split {
            request: None,
            denied: 0,
            ..
        }
    ));
}

#[test]
fn all_denied_is_answered_per_topic() {
    let frame = encode::request(
        ApiKey::ListOffsets,
        V,
        9,
        "c",
        &list_offsets(&["no-a", "no-b"]),
    )
    .unwrap();
    let Policed::Answer {
        frame: answer,
        denied,
    } = police_frame(&frame)
    else {
        panic!("answered");
    };
    assert_eq!(denied, 2);
    let r: ListOffsetsResponse = body(&answer, ApiKey::ListOffsets, V, false);
    let got: Vec<(&str, i32, i16)> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.as_str(), p.partition_index, p.error_code))
        })
        .collect();
    assert_eq!(got, [("no-a", 3, 29), ("no-b", 3, 29)]);
    assert_eq!(crate::frame::response_correlation_id(&answer).unwrap(), 9);
}

#[test]
fn a_mixed_request_is_split_and_its_response_merged() {
    let frame = encode::request(
        ApiKey::ListOffsets,
        V,
        9,
        "client-1",
        &list_offsets(&["ok-a", "no-b"]),
    )
    .unwrap();
    let Policed::Split {
        request: Some(sent),
        merge,
        denied,
    } = police_frame(&frame)
    else {
        panic!("split");
    };
    assert_eq!(denied, 1);
    // The header goes on as the client wrote it.
    assert_eq!(client_id(&sent), Some("client-1"));
    assert_eq!(
        request_header(&sent).unwrap(),
        request_header(&frame).unwrap()
    );
    let forwarded: ListOffsetsRequest = body(&sent, ApiKey::ListOffsets, V, true);
    assert_eq!(forwarded, list_offsets(&["ok-a"]));

    let mut upstream = ListOffsetsResponse::default();
    let mut t = list_offsets_response::ListOffsetsTopicResponse::default();
    t.name = topic("ok-a");
    let mut p = list_offsets_response::ListOffsetsPartitionResponse::default();
    p.partition_index = 3;
    p.offset = 42;
    t.partitions = vec![p];
    upstream.topics = vec![t];
    let response = encode::response(ApiKey::ListOffsets, V, 9, &upstream).unwrap();
    let merged = merge.apply(&response, &mut keep).unwrap();
    let r: ListOffsetsResponse = body(&merged, ApiKey::ListOffsets, V, false);
    let got: Vec<(&str, i64, i16)> = r
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.partitions[0].offset,
                t.partitions[0].error_code,
            )
        })
        .collect();
    assert_eq!(got, [("ok-a", 42, 0), ("no-b", -1, 29)]);
}

fn produce(names: &[&str]) -> ProduceRequest {
    let mut r = ProduceRequest::default();
    r.acks = -1;
    r.topic_data = names
        .iter()
        .map(|n| {
            let mut t = produce_request::TopicProduceData::default();
            t.name = topic(n);
            let mut p = produce_request::PartitionProduceData::default();
            p.index = 1;
            p.records = Some(Bytes::from_static(b"records"));
            t.partition_data = vec![p];
            t
        })
        .collect();
    r
}

#[test]
fn produce_is_split_with_its_records() {
    let frame = encode::request(ApiKey::Produce, 9, 1, "c", &produce(&["no-x", "ok-y"])).unwrap();
    let Policed::Split {
        request: Some(sent),
        ..
    } = police_frame(&frame)
    else {
        panic!("split");
    };
    let forwarded: ProduceRequest = body(&sent, ApiKey::Produce, 9, true);
    assert_eq!(forwarded, produce(&["ok-y"]));
}

#[test]
fn configs_police_only_topic_resources() {
    let mut r = DescribeConfigsRequest::default();
    for (kind, name) in [(2, "no-t"), (4, "broker-1"), (2, "ok-t")] {
        let mut res = describe_configs_request::DescribeConfigsResource::default();
        res.resource_type = kind;
        res.resource_name = StrBytes::from_static_str(name);
        r.resources.push(res);
    }
    let frame = encode::request(ApiKey::DescribeConfigs, 4, 1, "c", &r).unwrap();
    let Policed::Split {
        request: Some(sent),
        merge,
        denied,
    } = police_frame(&frame)
    else {
        panic!("split");
    };
    assert_eq!(denied, 1);
    let forwarded: DescribeConfigsRequest = body(&sent, ApiKey::DescribeConfigs, 4, true);
    let names: Vec<&str> = forwarded
        .resources
        .iter()
        .map(|r| r.resource_name.as_str())
        .collect();
    assert_eq!(names, ["broker-1", "ok-t"]);
    let response = encode::response(
        ApiKey::DescribeConfigs,
        4,
        1,
        &DescribeConfigsResponse::default(),
    )
    .unwrap();
    let merged: DescribeConfigsResponse = body(
        &merge.apply(&response, &mut keep).unwrap(),
        ApiKey::DescribeConfigs,
        4,
        false,
    );
    let refused: Vec<(&str, i16)> = merged
        .results
        .iter()
        .map(|r| (r.resource_name.as_str(), r.error_code))
        .collect();
    assert_eq!(refused, [("no-t", 29)]);

    // Every topic denied, a broker resource beside them: the broker's
    // part still goes on.
    r.resources.remove(2);
    let frame = encode::request(ApiKey::DescribeConfigs, 4, 1, "c", &r).unwrap();
    let Policed::Split {
        request: Some(sent),
        ..
    } = police_frame(&frame)
    else {
        panic!("split, not answered whole");
    };
    let forwarded: DescribeConfigsRequest = body(&sent, ApiKey::DescribeConfigs, 4, true);
    assert_eq!(forwarded.resources.len(), 1);
    assert_eq!(forwarded.resources[0].resource_name.as_str(), "broker-1");
}

fn metadata_response(names: &[&str]) -> MetadataResponse {
    let mut r = MetadataResponse::default();
    r.topics = names
        .iter()
        .map(|n| {
            let mut t = metadata_response::MetadataResponseTopic::default();
            t.name = Some(topic(n));
            t
        })
        .collect();
    r
}

fn metadata_names(frame: &Bytes, version: i16) -> Vec<(String, i16)> {
    let r: MetadataResponse = body(frame, ApiKey::Metadata, version, false);
    r.topics
        .iter()
        .map(|t| {
            (
                t.name.as_ref().map_or("", |n| n.as_str()).to_owned(),
                t.error_code,
            )
        })
        .collect()
}

#[test]
fn metadata_for_all_topics_hides_what_may_not_be_described() {
    for version in [0, 4, 12] {
        let mut all = MetadataRequest::default();
        all.topics = if version == 0 { Some(Vec::new()) } else { None };
        let frame = encode::request(ApiKey::Metadata, version, 5, "c", &all).unwrap();
        let Policed::Split {
            request: None,
            merge,
            denied: 0,
        } = police_frame(&frame)
        else {
            panic!("v{version}: forwarded as it came, then filtered");
        };
        let upstream = encode::response(
            ApiKey::Metadata,
            version,
            5,
            &metadata_response(&["ok-1", "secret", "ok-2"]),
        )
        .unwrap();
        let merged = merge.apply(&upstream, &mut keep).unwrap();
        assert_eq!(
            metadata_names(&merged, version),
            [("ok-1".to_owned(), 0), ("ok-2".to_owned(), 0)],
            "v{version}"
        );
    }
}

#[test]
fn metadata_by_name_refuses_the_denied_names() {
    let named = |names: &[&str]| {
        let mut r = MetadataRequest::default();
        r.topics = Some(
            names
                .iter()
                .map(|n| {
                    let mut t = metadata_request::MetadataRequestTopic::default();
                    t.name = Some(topic(n));
                    t
                })
                .collect(),
        );
        r
    };
    let frame = encode::request(ApiKey::Metadata, 9, 5, "c", &named(&["ok-1", "secret"])).unwrap();
    let Policed::Split {
        request: Some(sent),
        merge,
        denied: 1,
    } = police_frame(&frame)
    else {
        panic!("split");
    };
    let forwarded: MetadataRequest = body(&sent, ApiKey::Metadata, 9, true);
    assert_eq!(forwarded, named(&["ok-1"]));
    let upstream = encode::response(ApiKey::Metadata, 9, 5, &metadata_response(&["ok-1"])).unwrap();
    let merged = merge.apply(&upstream, &mut keep).unwrap();
    assert_eq!(
        metadata_names(&merged, 9),
        [("ok-1".to_owned(), 0), ("secret".to_owned(), 29)]
    );
    // Every name denied: still forwarded (naming none) for the brokers.
    let frame = encode::request(ApiKey::Metadata, 9, 5, "c", &named(&["secret"])).unwrap();
    let Policed::Split {
        request: Some(sent),
        ..
    } = police_frame(&frame)
    else {
        panic!("forwarded naming none");
    };
    let forwarded: MetadataRequest = body(&sent, ApiKey::Metadata, 9, true);
    assert_eq!(forwarded.topics, Some(Vec::new()));
}

#[test]
fn apis_for_every_topic_are_refused_whole() {
    let mut r = ElectLeadersRequest::default();
    r.topic_partitions = None;
    let frame = encode::request(ApiKey::ElectLeaders, 2, 1, "c", &r).unwrap();
    let Policed::Answer { frame: answer, .. } = police_frame(&frame) else {
        panic!("answered whole");
    };
    let r: ElectLeadersResponse = body(&answer, ApiKey::ElectLeaders, 2, false);
    assert_eq!(r.error_code, 29);
}

#[test]
fn client_ids_are_read_from_the_header() {
    let frame =
        encode::request(ApiKey::ListOffsets, V, 9, "billing-7", &list_offsets(&[])).unwrap();
    assert_eq!(client_id(&frame), Some("billing-7"));
    assert_eq!(client_id(&frame[..15]), None);
}
