//! The requests naming groups or transactional ids whose responses have
//! an entry per entry of the request (a group, a coordinator key, a
//! partition): each entry refused with the error.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;

use super::super::codec::{decode, encode};
use super::{Named, Names, Refuse, g, message, t};

/// OffsetFetch names one group up to v7, a list of them from v8.
const OFFSET_FETCH_GROUPS: i16 = 8;

/// AddPartitionsToTxn names a list of transactions from v4 (brokers'
/// verification); one before.
const ADD_PARTITIONS_BATCHED: i16 = 4;

/// FindCoordinator asks for a list of keys from v4; one before.
const FIND_COORDINATOR_BATCHED: i16 = 4;

/// FindCoordinator's key types: a group, a transactional id (a share
/// group's state, 2, is the brokers' own).
const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

/// The names and refusal of each API answered entry by entry.
pub(super) fn entry(api: ApiKey) -> Option<(Names, Refuse)> {
    use ApiKey as K;
    Some(match api {
        K::OffsetCommit => (offset_commit_names, offset_commit),
        K::OffsetFetch => (offset_fetch_names, offset_fetch),
        K::FindCoordinator => (find_coordinator_names, find_coordinator),
        K::DescribeGroups => (describe_groups_names, describe_groups),
        K::AddPartitionsToTxn => (add_partitions_names, add_partitions),
        K::TxnOffsetCommit => (txn_offset_commit_names, txn_offset_commit),
        K::DeleteGroups => (delete_groups_names, delete_groups),
        K::OffsetDelete => (offset_delete_names, offset_delete),
        K::DescribeTransactions => (describe_transactions_names, describe_transactions),
        K::ConsumerGroupDescribe => (consumer_group_describe_names, consumer_group_describe),
        K::ShareGroupDescribe => (share_group_describe_names, share_group_describe),
        K::DescribeShareGroupOffsets => (share_offsets_names, share_offsets),
        _ => return None,
    })
}

fn offset_commit_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: OffsetCommitRequest = decode(buf, version)?;
    Ok(vec![g(&r.group_id)])
}

/// Every partition of every topic with the error, as a broker's ACLs
/// answer (the offset commits, plain and transactional).
macro_rules! per_partition {
    ($name:ident, $req:ty => $resp:ty, $module:ident, $topic:ident, $part:ident $(, $id:ident)?) => {
        fn $name(buf: &mut Bytes, version: i16, code: i16) -> Result<BytesMut, String> {
            use $module::*;
            let r: $req = decode(buf, version)?;
            let mut out = <$resp>::default();
            out.topics = (r.topics.iter())
                .map(|topic| {
                    let mut each = $topic::default();
                    each.name = topic.name.clone();
                    $(each.$id = topic.$id;)?
                    each.partitions = (topic.partitions.iter())
                        .map(|p| {
                            let mut part = $part::default();
                            part.partition_index = p.partition_index;
                            part.error_code = code;
                            part
                        })
                        .collect();
                    each
                })
                .collect();
            encode(&out, version)
        }
    };
}

per_partition!(
    offset_commit,
    OffsetCommitRequest => OffsetCommitResponse,
    offset_commit_response,
    OffsetCommitResponseTopic,
    OffsetCommitResponsePartition,
    topic_id
);
per_partition!(
    txn_offset_commit,
    TxnOffsetCommitRequest => TxnOffsetCommitResponse,
    txn_offset_commit_response,
    TxnOffsetCommitResponseTopic,
    TxnOffsetCommitResponsePartition
);

fn offset_fetch_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: OffsetFetchRequest = decode(buf, version)?;
    Ok(if version >= OFFSET_FETCH_GROUPS {
        r.groups.iter().map(|each| g(&each.group_id)).collect()
    } else {
        vec![g(&r.group_id)]
    })
}

/// The error at the top (v2 to v7) and on every partition asked; from
/// v8, on every group.
fn offset_fetch(buf: &mut Bytes, version: i16, code: i16) -> Result<BytesMut, String> {
    use offset_fetch_response::*;
    let r: OffsetFetchRequest = decode(buf, version)?;
    let mut out = OffsetFetchResponse::default();
    if version >= OFFSET_FETCH_GROUPS {
        out.groups = (r.groups.iter())
            .map(|asked| {
                let mut each = OffsetFetchResponseGroup::default();
                each.group_id = asked.group_id.clone();
                each.error_code = code;
                each
            })
            .collect();
        return encode(&out, version);
    }
    out.error_code = code;
    out.topics = (r.topics.iter().flatten())
        .map(|topic| {
            let mut each = OffsetFetchResponseTopic::default();
            each.name = topic.name.clone();
            each.partitions = (topic.partition_indexes.iter())
                .map(|index| {
                    let mut part = OffsetFetchResponsePartition::default();
                    part.partition_index = *index;
                    part.committed_offset = -1;
                    part.error_code = code;
                    part
                })
                .collect();
            each
        })
        .collect();
    encode(&out, version)
}

fn find_coordinator_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: FindCoordinatorRequest = decode(buf, version)?;
    let kind = |key: &kafka_protocol::protocol::StrBytes| match r.key_type {
        KEY_TYPE_GROUP => Some(g(&GroupId(key.clone()))),
        KEY_TYPE_TRANSACTION => Some(t(&TransactionalId(key.clone()))),
        _ => None,
    };
    Ok(if version >= FIND_COORDINATOR_BATCHED {
        r.coordinator_keys.iter().filter_map(kind).collect()
    } else {
        kind(&r.key).into_iter().collect()
    })
}

/// The error at the top (to v3) or on every key asked (v4 on).
fn find_coordinator(buf: &mut Bytes, version: i16, code: i16) -> Result<BytesMut, String> {
    let r: FindCoordinatorRequest = decode(buf, version)?;
    let mut out = FindCoordinatorResponse::default();
    if version < FIND_COORDINATOR_BATCHED {
        out.node_id = BrokerId(-1);
        out.port = -1;
        out.error_code = code;
        out.error_message = message();
        return encode(&out, version).or_else(|_| {
            out.error_message = None;
            encode(&out, version)
        });
    }
    out.coordinators = (r.coordinator_keys.iter())
        .map(|key| {
            let mut each = find_coordinator_response::Coordinator::default();
            each.key = key.clone();
            each.node_id = BrokerId(-1);
            each.port = -1;
            each.error_code = code;
            each.error_message = message();
            each
        })
        .collect();
    encode(&out, version)
}

fn describe_groups_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: DescribeGroupsRequest = decode(buf, version)?;
    Ok(r.groups.iter().map(g).collect())
}

fn describe_groups(buf: &mut Bytes, version: i16, code: i16) -> Result<BytesMut, String> {
    let r: DescribeGroupsRequest = decode(buf, version)?;
    let mut out = DescribeGroupsResponse::default();
    out.groups = (r.groups.into_iter())
        .map(|group_id| {
            let mut each = describe_groups_response::DescribedGroup::default();
            each.group_id = group_id;
            each.error_code = code;
            each.authorized_operations = i32::MIN;
            each
        })
        .collect();
    encode(&out, version)
}

fn add_partitions_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: AddPartitionsToTxnRequest = decode(buf, version)?;
    Ok(if version >= ADD_PARTITIONS_BATCHED {
        r.transactions
            .iter()
            .map(|x| t(&x.transactional_id))
            .collect()
    } else {
        vec![t(&r.v3_and_below_transactional_id)]
    })
}

/// Every partition with the error (to v3); from v4, the error at the top.
fn add_partitions(buf: &mut Bytes, version: i16, code: i16) -> Result<BytesMut, String> {
    use add_partitions_to_txn_response::*;
    let r: AddPartitionsToTxnRequest = decode(buf, version)?;
    let mut out = AddPartitionsToTxnResponse::default();
    if version >= ADD_PARTITIONS_BATCHED {
        out.error_code = code;
        return encode(&out, version);
    }
    out.results_by_topic_v3_and_below = (r.v3_and_below_topics.iter())
        .map(|topic| {
            let mut each = AddPartitionsToTxnTopicResult::default();
            each.name = topic.name.clone();
            each.results_by_partition = (topic.partitions.iter())
                .map(|index| {
                    let mut part = AddPartitionsToTxnPartitionResult::default();
                    part.partition_index = *index;
                    part.partition_error_code = code;
                    part
                })
                .collect();
            each
        })
        .collect();
    encode(&out, version)
}

fn txn_offset_commit_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: TxnOffsetCommitRequest = decode(buf, version)?;
    Ok(vec![t(&r.transactional_id), g(&r.group_id)])
}

fn delete_groups_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: DeleteGroupsRequest = decode(buf, version)?;
    Ok(r.groups_names.iter().map(g).collect())
}

pub(crate) fn delete_groups(buf: &mut Bytes, version: i16, code: i16) -> Result<BytesMut, String> {
    let r: DeleteGroupsRequest = decode(buf, version)?;
    let mut out = DeleteGroupsResponse::default();
    out.results = (r.groups_names.into_iter())
        .map(|group_id| {
            let mut each = delete_groups_response::DeletableGroupResult::default();
            each.group_id = group_id;
            each.error_code = code;
            each
        })
        .collect();
    encode(&out, version)
}

fn offset_delete_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: OffsetDeleteRequest = decode(buf, version)?;
    Ok(vec![g(&r.group_id)])
}

/// The error at the top, where a broker's ACLs put it.
fn offset_delete(buf: &mut Bytes, version: i16, code: i16) -> Result<BytesMut, String> {
    let _: OffsetDeleteRequest = decode(buf, version)?;
    let mut out = OffsetDeleteResponse::default();
    out.error_code = code;
    encode(&out, version)
}

fn describe_transactions_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: DescribeTransactionsRequest = decode(buf, version)?;
    Ok(r.transactional_ids.iter().map(t).collect())
}

fn describe_transactions(buf: &mut Bytes, version: i16, code: i16) -> Result<BytesMut, String> {
    let r: DescribeTransactionsRequest = decode(buf, version)?;
    let mut out = DescribeTransactionsResponse::default();
    out.transaction_states = (r.transactional_ids.into_iter())
        .map(|transactional_id| {
            let mut each = describe_transactions_response::TransactionState::default();
            each.transactional_id = transactional_id;
            each.error_code = code;
            each.producer_id = ProducerId(-1);
            each.producer_epoch = -1;
            each
        })
        .collect();
    encode(&out, version)
}

fn consumer_group_describe_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: ConsumerGroupDescribeRequest = decode(buf, version)?;
    Ok(r.group_ids.iter().map(g).collect())
}

/// Each group described with the error (KIP-848's and share groups'
/// descriptions have the same shape).
macro_rules! described {
    ($name:ident, $req:ty => $resp:ty, $module:ident) => {
        fn $name(buf: &mut Bytes, version: i16, code: i16) -> Result<BytesMut, String> {
            let r: $req = decode(buf, version)?;
            let mut out = <$resp>::default();
            out.groups = (r.group_ids.into_iter())
                .map(|group_id| {
                    let mut each = $module::DescribedGroup::default();
                    each.group_id = group_id;
                    each.error_code = code;
                    each.error_message = message();
                    each.authorized_operations = i32::MIN;
                    each
                })
                .collect();
            encode(&out, version)
        }
    };
}

described!(
    consumer_group_describe,
    ConsumerGroupDescribeRequest => ConsumerGroupDescribeResponse,
    consumer_group_describe_response
);
described!(
    share_group_describe,
    ShareGroupDescribeRequest => ShareGroupDescribeResponse,
    share_group_describe_response
);

fn share_group_describe_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: ShareGroupDescribeRequest = decode(buf, version)?;
    Ok(r.group_ids.iter().map(g).collect())
}

fn share_offsets_names(buf: &mut Bytes, version: i16) -> Result<Named, String> {
    let r: DescribeShareGroupOffsetsRequest = decode(buf, version)?;
    Ok(r.groups.iter().map(|each| g(&each.group_id)).collect())
}

fn share_offsets(buf: &mut Bytes, version: i16, code: i16) -> Result<BytesMut, String> {
    use describe_share_group_offsets_response::*;
    let r: DescribeShareGroupOffsetsRequest = decode(buf, version)?;
    let mut out = DescribeShareGroupOffsetsResponse::default();
    out.groups = (r.groups.into_iter())
        .map(|asked| {
            let mut each = DescribeShareGroupOffsetsResponseGroup::default();
            each.group_id = asked.group_id;
            each.error_code = code;
            each.error_message = message();
            each
        })
        .collect();
    encode(&out, version)
}
