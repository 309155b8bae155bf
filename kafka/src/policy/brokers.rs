//! Brokers' APIs naming topics, refused whole unless the operation is
//! allowed on every topic: AddPartitionsToTxn v4 (brokers' batched
//! verification; v0 to v3, a client's, is judged per topic),
//! AlterReplicaLogDirs and WriteTxnMarkers. Their refusal gives every
//! partition they name the error, where a client reads it (an empty
//! answer would read as nothing done and nothing wrong).

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::*;

use super::{Handling, Topics};

/// AddPartitionsToTxn's results for `topics`' partitions, each with `code`.
fn txn_results<'a>(
    topics: impl Iterator<Item = &'a add_partitions_to_txn_request::AddPartitionsToTxnTopic>,
    code: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let topic = |t: &add_partitions_to_txn_request::AddPartitionsToTxnTopic| {
        let mut out = AddPartitionsToTxnTopicResult::default();
        out.name = t.name.clone();
        out.results_by_partition = (t.partitions.iter())
            .map(|p| {
                let mut r = AddPartitionsToTxnPartitionResult::default();
                r.partition_index = *p;
                r.partition_error_code = code;
                r
            })
            .collect();
        out
    };
    topics.map(topic).collect()
}

impl Topics for AddPartitionsToTxnRequest {
    type Response = AddPartitionsToTxnResponse;
    /// Batched (v4, brokers' verification): refused whole.
    fn names_every_topic(&self) -> bool {
        !self.transactions.is_empty()
    }
    fn names(&self) -> Vec<&str> {
        self.v3_and_below_topics
            .iter()
            .map(|t| t.name.as_str())
            .collect()
    }
    fn retain(&mut self, keep: &mut dyn FnMut(&str) -> bool, _others: bool) {
        self.v3_and_below_topics.retain(|t| keep(t.name.as_str()));
    }
    /// Before v4 per topic; from v4 per transaction, each of its topics'
    /// partitions with `code` (as Kafka answers a topic its ACLs refuse).
    fn refuse(&self, into: &mut AddPartitionsToTxnResponse, code: i16) {
        let topics = txn_results(self.v3_and_below_topics.iter(), code);
        into.results_by_topic_v3_and_below.extend(topics);
        for x in &self.transactions {
            let mut out = AddPartitionsToTxnResult::default();
            out.transactional_id = x.transactional_id.clone();
            out.topic_results = txn_results(x.topics.iter(), code);
            into.results_by_transaction.push(out);
        }
    }
}

/// The partitions `indexes` with `code`, as `make` builds each.
fn partitions<T>(indexes: &[i32], make: impl Fn(i32) -> T) -> Vec<T> {
    indexes.iter().map(|p| make(*p)).collect()
}

impl Topics for AlterReplicaLogDirsRequest {
    type Response = AlterReplicaLogDirsResponse;
    const SPLIT: bool = false;
    const HANDLING: Handling = Handling::Whole;
    fn names(&self) -> Vec<&str> {
        Vec::new()
    }
    fn names_every_topic(&self) -> bool {
        true
    }
    fn retain(&mut self, _keep: &mut dyn FnMut(&str) -> bool, _others: bool) {}
    /// Each partition of each directory's topics gets `code`.
    fn refuse(&self, into: &mut AlterReplicaLogDirsResponse, code: i16) {
        for t in self.dirs.iter().flat_map(|d| &d.topics) {
            let mut out = AlterReplicaLogDirTopicResult::default();
            out.topic_name = t.name.clone();
            out.partitions = partitions(&t.partitions, |p| {
                let mut r = AlterReplicaLogDirPartitionResult::default();
                r.partition_index = p;
                r.error_code = code;
                r
            });
            into.results.push(out);
        }
    }
}

impl Topics for WriteTxnMarkersRequest {
    type Response = WriteTxnMarkersResponse;
    const SPLIT: bool = false;
    const HANDLING: Handling = Handling::Whole;
    fn names(&self) -> Vec<&str> {
        Vec::new()
    }
    fn names_every_topic(&self) -> bool {
        true
    }
    fn retain(&mut self, _keep: &mut dyn FnMut(&str) -> bool, _others: bool) {}
    /// Each marker's topics' partitions get `code`.
    fn refuse(&self, into: &mut WriteTxnMarkersResponse, code: i16) {
        for m in &self.markers {
            let mut marker = WritableTxnMarkerResult::default();
            marker.producer_id = m.producer_id;
            for t in &m.topics {
                let mut out = WritableTxnMarkerTopicResult::default();
                out.name = t.name.clone();
                out.partitions = partitions(&t.partition_indexes, |p| {
                    let mut r = WritableTxnMarkerPartitionResult::default();
                    r.partition_index = p;
                    r.error_code = code;
                    r
                });
                marker.topics.push(out);
            }
            into.markers.push(marker);
        }
    }
}
