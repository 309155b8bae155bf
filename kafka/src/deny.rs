//! Error responses made by the proxy itself, for requests a filter denies.
//! Each names every resource of the request with the error, so clients report
//! it per topic, group or resource like a broker's own refusal.

use std::sync::LazyLock;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, ApiKey, CreateAclsRequest, CreateAclsResponse,
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteAclsRequest, DeleteAclsResponse, DeleteGroupsRequest, DeleteGroupsResponse,
    DeleteRecordsRequest, DeleteRecordsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, RequestHeader as KHeader,
    ResponseHeader, alter_configs_response, create_acls_response, create_partitions_response,
    create_topics_response, delete_acls_response, delete_groups_response, delete_records_response,
    delete_topics_response, incremental_alter_configs_response,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use sluice_config::apis;

use super::codec::{decode, encode, with_header};
use super::frame::{FrameError, RequestHeader};

/// APIs the proxy can answer with an error itself: those the `apis` table
/// of `sluice-config` marks deniable (a test checks each has an answer here).
pub static DENIABLE_APIS: LazyLock<Vec<ApiKey>> = LazyLock::new(|| {
    apis::deniable()
        .filter_map(|a| ApiKey::try_from(a.key).ok())
        .collect()
});

/// Kafka's POLICY_VIOLATION: the request breaks a configured policy; clients
/// surface it and do not retry. What `deny-apis` answers with.
pub const POLICY_VIOLATION: i16 = 44;

const MESSAGE: &str = "denied by the proxy's deny-apis filter";

/// Builds the response frame refusing `frame` (a request, prefix included)
/// with `error_code` on every resource it names.
pub fn deny_response(
    frame: &Bytes,
    request: &RequestHeader,
    error_code: i16,
) -> Result<Bytes, FrameError> {
    let version = request.api_version;
    let fail = |reason: String| FrameError::BadRequest {
        api: ApiKey::try_from(request.api_key).map_or_else(
            |()| format!("api key {}", request.api_key),
            |a| format!("{a:?}"),
        ),
        version,
        reason,
    };
    let api = ApiKey::try_from(request.api_key).map_err(|()| fail("unknown API".to_owned()))?;
    let mut buf = frame.slice(4..);
    KHeader::decode(&mut buf, api.request_header_version(version))
        .map_err(|e| fail(e.to_string()))?;
    let refuse =
        refusal(api).ok_or_else(|| fail(format!("the proxy cannot answer {api:?} itself")))?;
    let body = refuse(&mut buf, version, error_code).map_err(fail)?;
    let mut header = ResponseHeader::default();
    header.correlation_id = request.correlation_id;
    with_header(&header, api.response_header_version(version), &body).map_err(fail)
}

/// How the proxy refuses one API: decodes the request body (at a version)
/// and encodes the response naming each of its resources with the error
/// code.
type Refusal = fn(&mut Bytes, i16, i16) -> Result<BytesMut, String>;

/// The refusal of each API the proxy can answer itself.
fn refusal(api: ApiKey) -> Option<Refusal> {
    Some(match api {
        ApiKey::CreateTopics => create_topics,
        ApiKey::DeleteTopics => delete_topics,
        ApiKey::DeleteRecords => delete_records,
        ApiKey::CreatePartitions => create_partitions,
        ApiKey::DeleteGroups => delete_groups,
        ApiKey::AlterConfigs => alter_configs,
        ApiKey::IncrementalAlterConfigs => incremental_alter_configs,
        ApiKey::CreateAcls => create_acls,
        ApiKey::DeleteAcls => delete_acls,
        _ => return None,
    })
}

/// The error message every refusal carries where the response has one.
fn message() -> Option<StrBytes> {
    Some(StrBytes::from_static_str(MESSAGE))
}

fn create_topics(buf: &mut Bytes, version: i16, error_code: i16) -> Result<BytesMut, String> {
    let req = decode::<CreateTopicsRequest>(buf, version)?;
    let mut r = CreateTopicsResponse::default();
    r.topics = req
        .topics
        .into_iter()
        .map(|t| {
            let mut out = create_topics_response::CreatableTopicResult::default();
            out.name = t.name;
            out.error_code = error_code;
            out.error_message = message();
            out.num_partitions = -1;
            out.replication_factor = -1;
            out
        })
        .collect();
    encode(&r, version)
}

fn delete_topics(buf: &mut Bytes, version: i16, error_code: i16) -> Result<BytesMut, String> {
    let req = decode::<DeleteTopicsRequest>(buf, version)?;
    let mut r = DeleteTopicsResponse::default();
    let named = req
        .topic_names
        .into_iter()
        .map(|n| (Some(n), Default::default()));
    let states = req.topics.into_iter().map(|t| (t.name, t.topic_id));
    r.responses = named
        .chain(states)
        .map(|(name, topic_id)| {
            let mut out = delete_topics_response::DeletableTopicResult::default();
            out.name = name;
            out.topic_id = topic_id;
            out.error_code = error_code;
            out.error_message = message();
            out
        })
        .collect();
    encode(&r, version)
}

fn delete_records(buf: &mut Bytes, version: i16, error_code: i16) -> Result<BytesMut, String> {
    let req = decode::<DeleteRecordsRequest>(buf, version)?;
    let mut r = DeleteRecordsResponse::default();
    r.topics = req
        .topics
        .into_iter()
        .map(|t| {
            let mut out = delete_records_response::DeleteRecordsTopicResult::default();
            out.name = t.name;
            out.partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    let mut out = delete_records_response::DeleteRecordsPartitionResult::default();
                    out.partition_index = p.partition_index;
                    out.low_watermark = -1;
                    out.error_code = error_code;
                    out
                })
                .collect();
            out
        })
        .collect();
    encode(&r, version)
}

fn create_partitions(buf: &mut Bytes, version: i16, error_code: i16) -> Result<BytesMut, String> {
    let req = decode::<CreatePartitionsRequest>(buf, version)?;
    let mut r = CreatePartitionsResponse::default();
    r.results = req
        .topics
        .into_iter()
        .map(|t| {
            let mut out = create_partitions_response::CreatePartitionsTopicResult::default();
            out.name = t.name;
            out.error_code = error_code;
            out.error_message = message();
            out
        })
        .collect();
    encode(&r, version)
}

fn delete_groups(buf: &mut Bytes, version: i16, error_code: i16) -> Result<BytesMut, String> {
    let req = decode::<DeleteGroupsRequest>(buf, version)?;
    let mut r = DeleteGroupsResponse::default();
    r.results = req
        .groups_names
        .into_iter()
        .map(|g| {
            let mut out = delete_groups_response::DeletableGroupResult::default();
            out.group_id = g;
            out.error_code = error_code;
            out
        })
        .collect();
    encode(&r, version)
}

fn alter_configs(buf: &mut Bytes, version: i16, error_code: i16) -> Result<BytesMut, String> {
    let req = decode::<AlterConfigsRequest>(buf, version)?;
    let mut r = AlterConfigsResponse::default();
    r.responses = req
        .resources
        .into_iter()
        .map(|res| {
            let mut out = alter_configs_response::AlterConfigsResourceResponse::default();
            out.resource_type = res.resource_type;
            out.resource_name = res.resource_name;
            out.error_code = error_code;
            out.error_message = message();
            out
        })
        .collect();
    encode(&r, version)
}

fn incremental_alter_configs(
    buf: &mut Bytes,
    version: i16,
    error_code: i16,
) -> Result<BytesMut, String> {
    let req = decode::<IncrementalAlterConfigsRequest>(buf, version)?;
    let mut r = IncrementalAlterConfigsResponse::default();
    r.responses = req
        .resources
        .into_iter()
        .map(|res| {
            let mut out =
                incremental_alter_configs_response::AlterConfigsResourceResponse::default();
            out.resource_type = res.resource_type;
            out.resource_name = res.resource_name;
            out.error_code = error_code;
            out.error_message = message();
            out
        })
        .collect();
    encode(&r, version)
}

fn create_acls(buf: &mut Bytes, version: i16, error_code: i16) -> Result<BytesMut, String> {
    let req = decode::<CreateAclsRequest>(buf, version)?;
    let mut r = CreateAclsResponse::default();
    r.results = req
        .creations
        .iter()
        .map(|_| {
            let mut out = create_acls_response::AclCreationResult::default();
            out.error_code = error_code;
            out.error_message = message();
            out
        })
        .collect();
    encode(&r, version)
}

fn delete_acls(buf: &mut Bytes, version: i16, error_code: i16) -> Result<BytesMut, String> {
    let req = decode::<DeleteAclsRequest>(buf, version)?;
    let mut r = DeleteAclsResponse::default();
    r.filter_results = req
        .filters
        .iter()
        .map(|_| {
            let mut out = delete_acls_response::DeleteAclsFilterResult::default();
            out.error_code = error_code;
            out.error_message = message();
            out
        })
        .collect();
    encode(&r, version)
}
