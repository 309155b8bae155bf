//! Cluster operations refused: the proxy's answer to a request of an API
//! that acts on the cluster (what Kafka's ACLs judge on the CLUSTER
//! resource, and DeleteGroups) when the topic policy refuses it. Each
//! answer carries the protocol's own error wherever the response has a
//! place for one: CLUSTER_AUTHORIZATION_FAILED at the top and on each
//! entry; GROUP_AUTHORIZATION_FAILED on each group of DeleteGroups.
//! Nothing goes upstream, and the connection stays open.
//!
//! The configs APIs' BROKER (and other non-topic) resources are judged
//! beside their topics, per resource: they go by [`CLUSTER_RESOURCE`] in
//! the per-topic policing ([`policy`](crate::policy)), and are refused
//! with CLUSTER_AUTHORIZATION_FAILED in its answers.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::RequestHeader as KHeader;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::Decodable;

use super::codec::{encode, with_header};
use super::frame::{FrameError, RequestHeader};

mod entries;

/// Kafka's CLUSTER_AUTHORIZATION_FAILED: what a broker answers when its
/// ACLs refuse an operation on the cluster; clients do not retry it.
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;

pub use super::resources::GROUP_AUTHORIZATION_FAILED;

/// The name a configs request's non-topic resource (BROKER, BROKER_LOGGER,
/// ...) is judged by: no topic has it ('(' is not a topic character).
pub const CLUSTER_RESOURCE: &str = "(cluster)";

#[cfg(test)]
use super::resources::MESSAGE;
pub(crate) use super::resources::message;

/// Decodes a request body (at a version) and encodes its refusal.
type Refuse = fn(&mut Bytes, i16) -> Result<BytesMut, String>;

/// Whether the proxy can refuse `api_key` as a cluster operation.
pub fn refuses(api_key: i16) -> bool {
    ApiKey::try_from(api_key).ok().and_then(refusal).is_some()
}

/// The proxy's answer refusing `frame` (a request, prefix included, to
/// `header`) as a cluster operation.
pub fn refuse_cluster(frame: &Bytes, header: &RequestHeader) -> Result<Bytes, FrameError> {
    let version = header.api_version;
    let api = ApiKey::try_from(header.api_key).map_err(|()| FrameError::BadRequest {
        api: format!("api key {}", header.api_key),
        version,
        reason: "unknown API".to_owned(),
    })?;
    let fail = |reason: String| FrameError::BadRequest {
        api: format!("{api:?}"),
        version,
        reason,
    };
    let refuse = refusal(api).ok_or_else(|| fail("not a cluster operation".to_owned()))?;
    let mut buf = frame.slice(4..);
    KHeader::decode(&mut buf, api.request_header_version(version))
        .map_err(|e| fail(e.to_string()))?;
    let body = refuse(&mut buf, version).map_err(fail)?;
    let mut out = ResponseHeader::default();
    out.correlation_id = header.correlation_id;
    with_header(&out, api.response_header_version(version), &body).map_err(fail)
}

/// A response with the error at its top (and its message, when it has
/// one), the request left unread: every entry of these answers is the
/// request's own (a list, a description) or there is none. Where a
/// version has no place for the message, it goes without; where it has
/// none for the error (DescribeLogDirs before v3), the answer is empty,
/// as a broker's is.
macro_rules! top {
    ($resp:ty) => {
        (|_, version| {
            let mut r = <$resp>::default();
            r.error_code = CLUSTER_AUTHORIZATION_FAILED;
            encode(&r, version).or_else(|_| encode(&<$resp>::default(), version))
        }) as Refuse
    };
    ($resp:ty, message) => {
        (|_, version| {
            let mut r = <$resp>::default();
            r.error_code = CLUSTER_AUTHORIZATION_FAILED;
            r.error_message = message();
            encode(&r, version).or_else(|_| {
                r.error_message = None;
                encode(&r, version)
            })
        }) as Refuse
    };
}

/// The refusal of each cluster API (those of `sluice-config`'s
/// `API_OPERATIONS` whose operation is a cluster one: a test checks each
/// is here). DescribeConfigs, AlterConfigs and IncrementalAlterConfigs are
/// judged per resource by the topic policing, not here.
fn refusal(api: ApiKey) -> Option<Refuse> {
    use ApiKey as K;
    Some(match api {
        K::DescribeAcls => top!(DescribeAclsResponse, message),
        K::DescribeLogDirs => top!(DescribeLogDirsResponse),
        K::ListPartitionReassignments => top!(ListPartitionReassignmentsResponse, message),
        K::DescribeClientQuotas => top!(DescribeClientQuotasResponse, message),
        K::DescribeUserScramCredentials => top!(DescribeUserScramCredentialsResponse, message),
        K::Vote => top!(VoteResponse),
        K::BeginQuorumEpoch => top!(BeginQuorumEpochResponse),
        K::EndQuorumEpoch => top!(EndQuorumEpochResponse),
        K::DescribeQuorum => top!(DescribeQuorumResponse, message),
        K::AlterPartition => top!(AlterPartitionResponse),
        K::UpdateFeatures => top!(UpdateFeaturesResponse, message),
        K::Envelope => top!(EnvelopeResponse),
        K::FetchSnapshot => top!(FetchSnapshotResponse),
        K::BrokerRegistration => top!(BrokerRegistrationResponse),
        K::BrokerHeartbeat => top!(BrokerHeartbeatResponse),
        K::UnregisterBroker => top!(UnregisterBrokerResponse, message),
        K::AllocateProducerIds => top!(AllocateProducerIdsResponse),
        K::ControllerRegistration => top!(ControllerRegistrationResponse, message),
        K::AssignReplicasToDirs => top!(AssignReplicasToDirsResponse),
        K::ListConfigResources => top!(ListConfigResourcesResponse),
        K::AddRaftVoter => top!(AddRaftVoterResponse, message),
        K::RemoveRaftVoter => top!(RemoveRaftVoterResponse, message),
        K::UpdateRaftVoter => top!(UpdateRaftVoterResponse),
        _ => return entries::refusal(api),
    })
}

#[cfg(test)]
mod tests;
