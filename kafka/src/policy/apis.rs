//! Each API a topic policy polices: where its topics are in the request,
//! and where their errors go in the response. The APIs are those of
//! `sluice-config`'s `policy::API_OPERATIONS` (a test checks each is here).

use std::borrow::Cow;

use bytes::Bytes;
use kafka_protocol::messages::*;

use super::{Policed, Request, TopicIds, Topics, judge};

/// Kafka's TOPIC resource type in the configs APIs.
const TOPIC_RESOURCE: i8 = 2;

/// How the proxy polices an API's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// Judged per topic: split, answered or forwarded.
    PerTopic,
    /// Per topic, and a request for every topic has its answer filtered.
    Listed,
    /// Refused whole unless the operation is allowed on every topic.
    Whole,
}

/// How the proxy polices `api_key`; `None` for APIs that name no topics.
pub fn handling(api_key: i16) -> Option<Handling> {
    Some(entry(ApiKey::try_from(api_key).ok()?)?.1)
}

/// Whether the proxy polices this API (it names topics, or is refused as
/// a cluster operation: `crate::cluster`).
pub fn policed(api_key: i16) -> bool {
    handling(api_key).is_some() || crate::cluster::refuses(api_key)
}

type Judge =
    fn(&Request<'_>, &mut Bytes, i16, &mut dyn FnMut(&str) -> bool) -> Result<Policed, String>;

fn of<T: Topics>() -> (Judge, Handling) {
    (judge::<T>, T::HANDLING)
}

fn entry(api: ApiKey) -> Option<(Judge, Handling)> {
    use ApiKey as K;
    Some(match api {
        K::Produce => of::<ProduceRequest>(),
        K::Fetch => of::<FetchRequest>(),
        K::ListOffsets => of::<ListOffsetsRequest>(),
        K::Metadata => of::<MetadataRequest>(),
        K::OffsetCommit => of::<OffsetCommitRequest>(),
        K::OffsetFetch => of::<OffsetFetchRequest>(),
        K::CreateTopics => of::<CreateTopicsRequest>(),
        K::DeleteTopics => of::<DeleteTopicsRequest>(),
        K::DeleteRecords => of::<DeleteRecordsRequest>(),
        K::OffsetForLeaderEpoch => of::<OffsetForLeaderEpochRequest>(),
        K::AddPartitionsToTxn => of::<AddPartitionsToTxnRequest>(),
        K::WriteTxnMarkers => of::<WriteTxnMarkersRequest>(),
        K::TxnOffsetCommit => of::<TxnOffsetCommitRequest>(),
        K::DescribeConfigs => of::<DescribeConfigsRequest>(),
        K::AlterConfigs => of::<AlterConfigsRequest>(),
        K::AlterReplicaLogDirs => of::<AlterReplicaLogDirsRequest>(),
        K::DescribeLogDirs => of::<DescribeLogDirsRequest>(),
        K::CreatePartitions => of::<CreatePartitionsRequest>(),
        K::ElectLeaders => of::<ElectLeadersRequest>(),
        K::IncrementalAlterConfigs => of::<IncrementalAlterConfigsRequest>(),
        K::AlterPartitionReassignments => of::<AlterPartitionReassignmentsRequest>(),
        K::ListPartitionReassignments => of::<ListPartitionReassignmentsRequest>(),
        K::OffsetDelete => of::<OffsetDeleteRequest>(),
        K::DescribeProducers => of::<DescribeProducersRequest>(),
        K::DescribeTopicPartitions => of::<DescribeTopicPartitionsRequest>(),
        K::ShareFetch => of::<ShareFetchRequest>(),
        K::ShareAcknowledge => of::<ShareAcknowledgeRequest>(),
        K::DescribeShareGroupOffsets => of::<DescribeShareGroupOffsetsRequest>(),
        K::AlterShareGroupOffsets => of::<AlterShareGroupOffsetsRequest>(),
        K::DeleteShareGroupOffsets => of::<DeleteShareGroupOffsetsRequest>(),
        _ => return None,
    })
}

/// Judges the request `at` (its body in `body`).
pub(super) fn dispatch(
    at: &Request<'_>,
    body: &mut Bytes,
    version: i16,
    keep: &mut dyn FnMut(&str) -> bool,
) -> Result<Policed, String> {
    match entry(at.api) {
        Some((judge, _)) => judge(at, body, version, keep),
        None => Ok(Policed::Forward),
    }
}

/// Requests of topics with partitions, answered per partition.
macro_rules! by_partition {
    (
        $req:ty => $resp:ty,
        $topics:ident[$name:ident].$parts:ident[|$p:ident| $idx:expr],
        $rtopics:ident: $rtopic:ty [$rname:ident].$rparts:ident: $rpart:ty [$ridx:ident, $rerr:ident]
        $(, id: $tid:ident => $rtid:ident)?
    ) => {
        impl Topics for $req {
            type Response = $resp;
            fn names(&self) -> Vec<&str> {
                self.$topics.iter().map(|t| t.$name.as_str()).collect()
            }
            $(
                /// Topics named by id only (Produce v13 on; OffsetCommit
                /// once its codec decodes v10): judged by the names
                /// Metadata taught.
                fn resolved(&self, ids: &TopicIds) -> Vec<Option<Cow<'_, str>>> {
                    self.$topics
                        .iter()
                        .map(|t| {
                            if t.$name.is_empty() && !t.$tid.is_nil() {
                                ids.name(t.$tid).map(Cow::Owned)
                            } else {
                                Some(Cow::Borrowed(t.$name.as_str()))
                            }
                        })
                        .collect()
                }
            )?
            fn retain(&mut self, keep: &mut dyn FnMut(&str) -> bool, _others: bool) {
                self.$topics.retain(|t| keep(t.$name.as_str()));
            }
            fn refuse(&self, into: &mut $resp, code: i16) {
                for t in &self.$topics {
                    let mut out = <$rtopic>::default();
                    out.$rname = t.$name.clone();
                    $(out.$rtid = t.$tid;)?
                    out.$rparts = t
                        .$parts
                        .iter()
                        .map(|$p| {
                            let mut o = <$rpart>::default();
                            o.$ridx = $idx;
                            o.$rerr = code;
                            o
                        })
                        .collect();
                    into.$rtopics.push(out);
                }
            }
        }
    };
}

by_partition!(ProduceRequest => ProduceResponse,
    topic_data[name].partition_data[|p| p.index],
    responses: produce_response::TopicProduceResponse[name]
        .partition_responses: produce_response::PartitionProduceResponse[index, error_code],
    id: topic_id => topic_id);
by_partition!(ListOffsetsRequest => ListOffsetsResponse,
    topics[name].partitions[|p| p.partition_index],
    topics: list_offsets_response::ListOffsetsTopicResponse[name]
        .partitions: list_offsets_response::ListOffsetsPartitionResponse[partition_index, error_code]);
by_partition!(OffsetCommitRequest => OffsetCommitResponse,
    topics[name].partitions[|p| p.partition_index],
    topics: offset_commit_response::OffsetCommitResponseTopic[name]
        .partitions: offset_commit_response::OffsetCommitResponsePartition[partition_index, error_code],
    id: topic_id => topic_id);
by_partition!(TxnOffsetCommitRequest => TxnOffsetCommitResponse,
    topics[name].partitions[|p| p.partition_index],
    topics: txn_offset_commit_response::TxnOffsetCommitResponseTopic[name]
        .partitions: txn_offset_commit_response::TxnOffsetCommitResponsePartition[partition_index, error_code]);
by_partition!(OffsetDeleteRequest => OffsetDeleteResponse,
    topics[name].partitions[|p| p.partition_index],
    topics: offset_delete_response::OffsetDeleteResponseTopic[name]
        .partitions: offset_delete_response::OffsetDeleteResponsePartition[partition_index, error_code]);
by_partition!(OffsetForLeaderEpochRequest => OffsetForLeaderEpochResponse,
    topics[topic].partitions[|p| p.partition],
    topics: offset_for_leader_epoch_response::OffsetForLeaderTopicResult[topic]
        .partitions: offset_for_leader_epoch_response::EpochEndOffset[partition, error_code]);
by_partition!(DeleteRecordsRequest => DeleteRecordsResponse,
    topics[name].partitions[|p| p.partition_index],
    topics: delete_records_response::DeleteRecordsTopicResult[name]
        .partitions: delete_records_response::DeleteRecordsPartitionResult[partition_index, error_code]);
by_partition!(DescribeProducersRequest => DescribeProducersResponse,
    topics[name].partition_indexes[|p| *p],
    topics: describe_producers_response::TopicResponse[name]
        .partitions: describe_producers_response::PartitionResponse[partition_index, error_code]);
by_partition!(AlterPartitionReassignmentsRequest => AlterPartitionReassignmentsResponse,
    topics[name].partitions[|p| p.partition_index],
    responses: alter_partition_reassignments_response::ReassignableTopicResponse[name]
        .partitions: alter_partition_reassignments_response::ReassignablePartitionResponse[partition_index, error_code]);

/// Requests of topics, answered per topic.
macro_rules! by_topic {
    ($req:ty => $resp:ty, $topics:ident[$name:ident],
     $rtopics:ident: $rtopic:ty [$rname:ident = $wrap:path, $rerr:ident] $(, |$o:ident| $extra:expr)?) => {
        impl Topics for $req {
            type Response = $resp;
            fn names(&self) -> Vec<&str> {
                self.$topics.iter().map(|t| t.$name.as_str()).collect()
            }
            fn retain(&mut self, keep: &mut dyn FnMut(&str) -> bool, _others: bool) {
                self.$topics.retain(|t| keep(t.$name.as_str()));
            }
            fn refuse(&self, into: &mut $resp, code: i16) {
                for t in &self.$topics {
                    let mut out = <$rtopic>::default();
                    out.$rname = $wrap(t.$name.clone());
                    out.$rerr = code;
                    $(let $o = &mut out; $extra;)?
                    into.$rtopics.push(out);
                }
            }
        }
    };
}

by_topic!(CreateTopicsRequest => CreateTopicsResponse, topics[name],
    topics: create_topics_response::CreatableTopicResult[name = std::convert::identity, error_code],
    |o| { o.num_partitions = -1; o.replication_factor = -1; });
by_topic!(CreatePartitionsRequest => CreatePartitionsResponse, topics[name],
    results: create_partitions_response::CreatePartitionsTopicResult[name = std::convert::identity, error_code]);

/// The configs APIs, per resource: TOPIC resources by their names, the
/// others (BROKER, BROKER_LOGGER, ...) as the cluster
/// ([`CLUSTER_RESOURCE`](crate::cluster::CLUSTER_RESOURCE), judged as a
/// cluster operation), refused with CLUSTER_AUTHORIZATION_FAILED.
macro_rules! configs {
    ($req:ty => $resp:ty, $results:ident: $result:ty) => {
        impl Topics for $req {
            type Response = $resp;
            fn names(&self) -> Vec<&str> {
                self.resources
                    .iter()
                    .map(|r| resource_name(r.resource_type, &r.resource_name))
                    .collect()
            }
            fn retain(&mut self, keep: &mut dyn FnMut(&str) -> bool, _others: bool) {
                self.resources
                    .retain(|r| keep(resource_name(r.resource_type, &r.resource_name)));
            }
            fn refuse(&self, into: &mut $resp, code: i16) {
                for r in &self.resources {
                    let mut out = <$result>::default();
                    out.resource_type = r.resource_type;
                    out.resource_name = r.resource_name.clone();
                    out.error_code = code;
                    if r.resource_type != TOPIC_RESOURCE {
                        out.error_code = crate::cluster::CLUSTER_AUTHORIZATION_FAILED;
                        out.error_message = crate::cluster::message();
                    }
                    into.$results.push(out);
                }
            }
        }
    };
}

/// What a configs resource is judged by: a topic's name, or the cluster.
fn resource_name(kind: i8, name: &str) -> &str {
    if kind == TOPIC_RESOURCE {
        name
    } else {
        crate::cluster::CLUSTER_RESOURCE
    }
}

configs!(DescribeConfigsRequest => DescribeConfigsResponse,
    results: describe_configs_response::DescribeConfigsResult);
configs!(AlterConfigsRequest => AlterConfigsResponse,
    responses: alter_configs_response::AlterConfigsResourceResponse);
configs!(IncrementalAlterConfigsRequest => IncrementalAlterConfigsResponse,
    responses: incremental_alter_configs_response::AlterConfigsResourceResponse);

/// APIs refused whole unless the operation is allowed on every topic
/// (named by id, for every topic, or for brokers and administrators):
/// their answer carries the error once, where the response has a place
/// for it.
macro_rules! whole {
    ($req:ty => $resp:ty, |$r:ident, $code:ident| $set:expr) => {
        impl Topics for $req {
            type Response = $resp;
            const SPLIT: bool = false;
            const HANDLING: Handling = Handling::Whole;
            fn names(&self) -> Vec<&str> {
                Vec::new()
            }
            fn names_every_topic(&self) -> bool {
                true
            }
            fn retain(&mut self, _keep: &mut dyn FnMut(&str) -> bool, _others: bool) {}
            #[allow(unused_variables)]
            fn refuse(&self, $r: &mut $resp, $code: i16) {
                $set
            }
        }
    };
}

whole!(ElectLeadersRequest => ElectLeadersResponse, |r, code| r.error_code = code);
whole!(ListPartitionReassignmentsRequest => ListPartitionReassignmentsResponse,
    |r, code| r.error_code = code);
whole!(DescribeLogDirsRequest => DescribeLogDirsResponse, |r, code| r.error_code = code);
whole!(ShareFetchRequest => ShareFetchResponse, |r, code| r.error_code = code);
whole!(ShareAcknowledgeRequest => ShareAcknowledgeResponse, |r, code| r.error_code = code);
whole!(DescribeShareGroupOffsetsRequest => DescribeShareGroupOffsetsResponse, |r, code| ());
whole!(AlterShareGroupOffsetsRequest => AlterShareGroupOffsetsResponse,
    |r, code| r.error_code = code);
whole!(DeleteShareGroupOffsetsRequest => DeleteShareGroupOffsetsResponse,
    |r, code| r.error_code = code);
