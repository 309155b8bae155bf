//! ApiVersions capping and the proxy's own error responses.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse, ResponseHeader, TopicName, api_versions_response, create_topics_request,
    delete_topics_request,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use sluice_kafka::deny::POLICY_VIOLATION;
use sluice_kafka::deny::{DENIABLE_APIS, deny_response};
use sluice_kafka::frame::{RequestHeader, request_header};
use sluice_kafka::versions::cap_api_versions;

fn prefixed(b: BytesMut) -> Bytes {
    let mut f = BytesMut::new();
    f.put_i32(b.len() as i32);
    f.put_slice(&b);
    f.freeze()
}

fn versions_frame(version: i16, error: i16, keys: &[(i16, i16, i16)]) -> Bytes {
    let mut r = ApiVersionsResponse::default();
    r.error_code = error;
    r.api_keys = keys
        .iter()
        .map(|(k, min, max)| {
            let mut a = api_versions_response::ApiVersion::default();
            a.api_key = *k;
            a.min_version = *min;
            a.max_version = *max;
            a
        })
        .collect();
    let mut header = ResponseHeader::default();
    header.correlation_id = 9;
    let mut b = BytesMut::new();
    header
        .encode(&mut b, ApiKey::ApiVersions.response_header_version(version))
        .unwrap();
    r.encode(&mut b, version).unwrap();
    prefixed(b)
}

#[test]
fn api_versions_are_capped_for_decoded_apis_and_unknown_apis_removed() {
    let metadata_max = ApiKey::Metadata.valid_versions().max;
    for v in 0..=ApiKey::ApiVersions.valid_versions().max {
        let input = versions_frame(
            v,
            0,
            &[
                (0, 0, 11),
                (3, 0, metadata_max + 5),
                (18, 0, 4),
                (999, 0, 1),
            ],
        );
        let decoded = |k: i16| k == 3;
        let out = cap_api_versions(&input, v, &decoded).unwrap();
        let golden = versions_frame(v, 0, &[(0, 0, 11), (3, 0, metadata_max), (18, 0, 4)]);
        assert_eq!(out, golden, "ApiVersions v{v}");
    }
}

#[test]
fn fetch_is_offered_up_to_the_versions_the_proxy_decodes() {
    // KIP-951's versions are offered again: their responses stream
    // (`streamed`), only their tagged fields rewritten.
    let decoded = |k: i16| k == 1;
    let max = ApiKey::Fetch.valid_versions().max;
    // A broker up to Fetch v17 (Kafka 4) keeps v16 and v17.
    let input = versions_frame(3, 0, &[(1, 4, 17)]);
    let out = cap_api_versions(&input, 3, &decoded).unwrap();
    assert_eq!(out, versions_frame(3, 0, &[(1, 4, 17)]));
    // One beyond what the proxy decodes is lowered to it.
    let input = versions_frame(3, 0, &[(1, 16, max + 3)]);
    let out = cap_api_versions(&input, 3, &decoded).unwrap();
    assert_eq!(out, versions_frame(3, 0, &[(1, 16, max)]));
}

#[test]
fn api_versions_errors_pass_unchanged() {
    // UNSUPPORTED_VERSION is answered as v0 whatever the request's version.
    let input = versions_frame(0, 35, &[(18, 0, 3)]);
    assert_eq!(cap_api_versions(&input, 3, &|_| true).unwrap(), input);
}

fn request_frame<T: Encodable>(api: ApiKey, version: i16, body: &T) -> Bytes {
    sluice_kafka::encode::request(api, version, 77, "admin-1", body).unwrap()
}

fn response_body<T: Decodable>(api: ApiKey, version: i16, frame: &Bytes) -> (i32, T) {
    let mut buf = frame.slice(4..);
    let h = ResponseHeader::decode(&mut buf, api.response_header_version(version)).unwrap();
    let body = T::decode(&mut buf, version).unwrap();
    assert!(!buf.has_remaining());
    (h.correlation_id, body)
}

#[test]
fn delete_topics_is_refused_per_topic_in_every_version() {
    let range = ApiKey::DeleteTopics.valid_versions();
    for v in range.min..=range.max {
        let mut req = DeleteTopicsRequest::default();
        let names = ["orders", "payments"];
        if v < 6 {
            req.topic_names = names
                .iter()
                .map(|n| TopicName(StrBytes::from_static_str(n)))
                .collect();
        } else {
            req.topics = names
                .iter()
                .map(|n| {
                    let mut t = delete_topics_request::DeleteTopicState::default();
                    t.name = Some(TopicName(StrBytes::from_static_str(n)));
                    t
                })
                .collect();
        }
        let frame = request_frame(ApiKey::DeleteTopics, v, &req);
        let header = request_header(&frame).unwrap();
        let out = deny_response(&frame, &header, POLICY_VIOLATION).unwrap();
        let (corr, resp): (i32, DeleteTopicsResponse) =
            response_body(ApiKey::DeleteTopics, v, &out);
        assert_eq!(corr, 77);
        assert_eq!(resp.responses.len(), 2, "DeleteTopics v{v}");
        for (r, n) in resp.responses.iter().zip(names) {
            assert_eq!(r.name.as_ref().map(|t| t.0.to_string()).as_deref(), Some(n));
            assert_eq!(r.error_code, POLICY_VIOLATION);
        }
    }
}

#[test]
fn create_topics_is_refused_per_topic_in_every_version() {
    let range = ApiKey::CreateTopics.valid_versions();
    for v in range.min..=range.max {
        let mut req = CreateTopicsRequest::default();
        let mut t = create_topics_request::CreatableTopic::default();
        t.name = TopicName(StrBytes::from_static_str("new-topic"));
        t.num_partitions = 3;
        t.replication_factor = 1;
        req.topics = vec![t];
        let frame = request_frame(ApiKey::CreateTopics, v, &req);
        let out =
            deny_response(&frame, &request_header(&frame).unwrap(), POLICY_VIOLATION).unwrap();
        let (_, resp): (i32, CreateTopicsResponse) = response_body(ApiKey::CreateTopics, v, &out);
        assert_eq!(resp.topics[0].name.0.to_string(), "new-topic");
        assert_eq!(resp.topics[0].error_code, POLICY_VIOLATION);
    }
}

#[test]
fn every_deniable_api_answers_its_default_request_in_every_version() {
    for api in DENIABLE_APIS.iter() {
        let range = api.valid_versions();
        for v in range.min..=range.max {
            let frame = default_request(*api, v);
            let header = request_header(&frame).unwrap();
            let out = deny_response(&frame, &header, POLICY_VIOLATION)
                .unwrap_or_else(|e| panic!("{api:?} v{v}: {e}"));
            let mut buf = out.slice(4..);
            let h = ResponseHeader::decode(&mut buf, api.response_header_version(v)).unwrap();
            assert_eq!(h.correlation_id, 77);
        }
    }
}

fn default_request(api: ApiKey, v: i16) -> Bytes {
    use kafka_protocol::messages::*;
    match api {
        ApiKey::CreateTopics => request_frame(api, v, &CreateTopicsRequest::default()),
        ApiKey::DeleteTopics => request_frame(api, v, &DeleteTopicsRequest::default()),
        ApiKey::DeleteRecords => request_frame(api, v, &DeleteRecordsRequest::default()),
        ApiKey::CreatePartitions => request_frame(api, v, &CreatePartitionsRequest::default()),
        ApiKey::DeleteGroups => request_frame(api, v, &DeleteGroupsRequest::default()),
        ApiKey::AlterConfigs => request_frame(api, v, &AlterConfigsRequest::default()),
        ApiKey::IncrementalAlterConfigs => {
            request_frame(api, v, &IncrementalAlterConfigsRequest::default())
        }
        ApiKey::CreateAcls => request_frame(api, v, &CreateAclsRequest::default()),
        ApiKey::DeleteAcls => request_frame(api, v, &DeleteAclsRequest::default()),
        other => panic!("add {other:?} to this test"),
    }
}

#[test]
fn a_header_is_echoed_from_the_request() {
    let frame = request_frame(
        ApiKey::DeleteGroups,
        2,
        &kafka_protocol::messages::DeleteGroupsRequest::default(),
    );
    assert_eq!(
        request_header(&frame).unwrap(),
        RequestHeader {
            api_key: 42,
            api_version: 2,
            correlation_id: 77
        }
    );
}
