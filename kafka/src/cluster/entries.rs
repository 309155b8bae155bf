//! Cluster refusals whose responses have an entry per entry of the
//! request (a group, an ACL, a partition, a user): the request is decoded
//! (checked against its layout first) and each entry answered.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;

use super::super::codec::{decode, encode};
use super::{CLUSTER_AUTHORIZATION_FAILED as CLUSTER, GROUP_AUTHORIZATION_FAILED, Refuse, message};

/// The refusal of the cluster APIs answered entry by entry.
pub(super) fn refusal(api: ApiKey) -> Option<Refuse> {
    use ApiKey as K;
    Some(match api {
        K::DeleteGroups => delete_groups,
        K::CreateAcls => create_acls,
        K::DeleteAcls => delete_acls,
        K::AlterReplicaLogDirs => alter_replica_log_dirs,
        K::WriteTxnMarkers => write_txn_markers,
        K::ElectLeaders => elect_leaders,
        K::AlterPartitionReassignments => alter_partition_reassignments,
        K::AlterClientQuotas => alter_client_quotas,
        K::AlterUserScramCredentials => alter_user_scram_credentials,
        K::InitializeShareGroupState => initialize_share_group_state,
        K::ReadShareGroupState => read_share_group_state,
        K::WriteShareGroupState => write_share_group_state,
        K::DeleteShareGroupState => delete_share_group_state,
        K::ReadShareGroupStateSummary => read_share_group_state_summary,
        _ => return None,
    })
}

/// Each group with GROUP_AUTHORIZATION_FAILED, what a broker's ACLs answer
/// (DELETE on the group): the refusal of a group the policy judges.
fn delete_groups(buf: &mut Bytes, version: i16) -> Result<BytesMut, String> {
    crate::resources::refuse_delete_groups(buf, version, GROUP_AUTHORIZATION_FAILED)
}

fn create_acls(buf: &mut Bytes, version: i16) -> Result<BytesMut, String> {
    let req: CreateAclsRequest = decode(buf, version)?;
    let mut r = CreateAclsResponse::default();
    r.results = req
        .creations
        .iter()
        .map(|_| {
            let mut out = create_acls_response::AclCreationResult::default();
            out.error_code = CLUSTER;
            out.error_message = message();
            out
        })
        .collect();
    encode(&r, version)
}

fn delete_acls(buf: &mut Bytes, version: i16) -> Result<BytesMut, String> {
    let req: DeleteAclsRequest = decode(buf, version)?;
    let mut r = DeleteAclsResponse::default();
    r.filter_results = req
        .filters
        .iter()
        .map(|_| {
            let mut out = delete_acls_response::DeleteAclsFilterResult::default();
            out.error_code = CLUSTER;
            out.error_message = message();
            out
        })
        .collect();
    encode(&r, version)
}

fn alter_replica_log_dirs(buf: &mut Bytes, version: i16) -> Result<BytesMut, String> {
    use alter_replica_log_dirs_response as resp;
    let req: AlterReplicaLogDirsRequest = decode(buf, version)?;
    let mut r = AlterReplicaLogDirsResponse::default();
    for topic in req.dirs.into_iter().flat_map(|d| d.topics) {
        let mut out = resp::AlterReplicaLogDirTopicResult::default();
        out.topic_name = topic.name;
        out.partitions = topic
            .partitions
            .into_iter()
            .map(|partition_index| {
                let mut p = resp::AlterReplicaLogDirPartitionResult::default();
                p.partition_index = partition_index;
                p.error_code = CLUSTER;
                p
            })
            .collect();
        r.results.push(out);
    }
    encode(&r, version)
}

fn write_txn_markers(buf: &mut Bytes, version: i16) -> Result<BytesMut, String> {
    use write_txn_markers_response as resp;
    let req: WriteTxnMarkersRequest = decode(buf, version)?;
    let mut r = WriteTxnMarkersResponse::default();
    for marker in req.markers {
        let mut out = resp::WritableTxnMarkerResult::default();
        out.producer_id = marker.producer_id;
        for topic in marker.topics {
            let mut t = resp::WritableTxnMarkerTopicResult::default();
            t.name = topic.name;
            t.partitions = topic
                .partition_indexes
                .into_iter()
                .map(|partition_index| {
                    let mut p = resp::WritableTxnMarkerPartitionResult::default();
                    p.partition_index = partition_index;
                    p.error_code = CLUSTER;
                    p
                })
                .collect();
            out.topics.push(t);
        }
        r.markers.push(out);
    }
    encode(&r, version)
}

/// The error at the top (v1 on) and on each partition named (v0 has only
/// those; a request for every partition names none).
fn elect_leaders(buf: &mut Bytes, version: i16) -> Result<BytesMut, String> {
    use elect_leaders_response as resp;
    let req: ElectLeadersRequest = decode(buf, version)?;
    let mut r = ElectLeadersResponse::default();
    if version >= 1 {
        r.error_code = CLUSTER;
    }
    for topic in req.topic_partitions.unwrap_or_default() {
        let mut out = resp::ReplicaElectionResult::default();
        out.topic = topic.topic;
        out.partition_result = topic
            .partitions
            .into_iter()
            .map(|partition_id| {
                let mut p = resp::PartitionResult::default();
                p.partition_id = partition_id;
                p.error_code = CLUSTER;
                p.error_message = message();
                p
            })
            .collect();
        r.replica_election_results.push(out);
    }
    encode(&r, version)
}

fn alter_partition_reassignments(buf: &mut Bytes, version: i16) -> Result<BytesMut, String> {
    use alter_partition_reassignments_response as resp;
    let req: AlterPartitionReassignmentsRequest = decode(buf, version)?;
    let mut r = AlterPartitionReassignmentsResponse::default();
    r.error_code = CLUSTER;
    r.error_message = message();
    r.allow_replication_factor_change = req.allow_replication_factor_change;
    for topic in req.topics {
        let mut out = resp::ReassignableTopicResponse::default();
        out.name = topic.name;
        out.partitions = topic
            .partitions
            .into_iter()
            .map(|partition| {
                let mut p = resp::ReassignablePartitionResponse::default();
                p.partition_index = partition.partition_index;
                p.error_code = CLUSTER;
                p.error_message = message();
                p
            })
            .collect();
        r.responses.push(out);
    }
    encode(&r, version)
}

fn alter_client_quotas(buf: &mut Bytes, version: i16) -> Result<BytesMut, String> {
    use alter_client_quotas_response as resp;
    let req: AlterClientQuotasRequest = decode(buf, version)?;
    let mut r = AlterClientQuotasResponse::default();
    r.entries = req
        .entries
        .into_iter()
        .map(|entry| {
            let mut out = resp::EntryData::default();
            out.error_code = CLUSTER;
            out.error_message = message();
            out.entity = entry
                .entity
                .into_iter()
                .map(|e| {
                    let mut entity = resp::EntityData::default();
                    entity.entity_type = e.entity_type;
                    entity.entity_name = e.entity_name;
                    entity
                })
                .collect();
            out
        })
        .collect();
    encode(&r, version)
}

fn alter_user_scram_credentials(buf: &mut Bytes, version: i16) -> Result<BytesMut, String> {
    let req: AlterUserScramCredentialsRequest = decode(buf, version)?;
    let deleted = req.deletions.into_iter().map(|d| d.name);
    let upserted = req.upsertions.into_iter().map(|u| u.name);
    let mut r = AlterUserScramCredentialsResponse::default();
    r.results = deleted
        .chain(upserted)
        .map(|user| {
            let mut out =
                alter_user_scram_credentials_response::AlterUserScramCredentialsResult::default();
            out.user = user;
            out.error_code = CLUSTER;
            out.error_message = message();
            out
        })
        .collect();
    encode(&r, version)
}

/// The share coordinator's state APIs (brokers'): each partition of each
/// topic (by id) refused.
macro_rules! share_state {
    ($name:ident, $req:ty => $resp:ty, $m:ident::$result:ident) => {
        fn $name(buf: &mut Bytes, version: i16) -> Result<BytesMut, String> {
            let req: $req = decode(buf, version)?;
            let mut r = <$resp>::default();
            r.results = req
                .topics
                .into_iter()
                .map(|topic| {
                    let mut out = $m::$result::default();
                    out.topic_id = topic.topic_id;
                    out.partitions = topic
                        .partitions
                        .into_iter()
                        .map(|p| {
                            let mut o = $m::PartitionResult::default();
                            o.partition = p.partition;
                            o.error_code = CLUSTER;
                            o.error_message = message();
                            o
                        })
                        .collect();
                    out
                })
                .collect();
            encode(&r, version)
        }
    };
}

share_state!(initialize_share_group_state,
    InitializeShareGroupStateRequest => InitializeShareGroupStateResponse,
    initialize_share_group_state_response::InitializeStateResult);
share_state!(read_share_group_state,
    ReadShareGroupStateRequest => ReadShareGroupStateResponse,
    read_share_group_state_response::ReadStateResult);
share_state!(write_share_group_state,
    WriteShareGroupStateRequest => WriteShareGroupStateResponse,
    write_share_group_state_response::WriteStateResult);
share_state!(delete_share_group_state,
    DeleteShareGroupStateRequest => DeleteShareGroupStateResponse,
    delete_share_group_state_response::DeleteStateResult);
share_state!(read_share_group_state_summary,
    ReadShareGroupStateSummaryRequest => ReadShareGroupStateSummaryResponse,
    read_share_group_state_summary_response::ReadStateSummaryResult);
