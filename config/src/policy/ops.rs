//! The operations a topic policy names, and the one table of which Kafka
//! API is which operation (close to Kafka's ACL model). The proxy polices
//! exactly the APIs listed here; the docs' table is printed from it.

use crate::apis;

/// What a client does to a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// Write records.
    Produce,
    /// Read records, commit offsets.
    Consume,
    /// Learn that the topic exists, its partitions and offsets.
    Describe,
    /// Create it.
    Create,
    /// Delete it, or its records.
    Delete,
    /// Change its partitions or their replicas.
    Alter,
    /// Read its configuration.
    DescribeConfigs,
    /// Change its configuration.
    AlterConfigs,
}

impl Operation {
    /// Every operation, in the order the docs list them.
    pub const ALL: [Operation; 8] = [
        Operation::Produce,
        Operation::Consume,
        Operation::Describe,
        Operation::Create,
        Operation::Delete,
        Operation::Alter,
        Operation::DescribeConfigs,
        Operation::AlterConfigs,
    ];

    /// The name the configuration (and the metrics) use.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Produce => "produce",
            Operation::Consume => "consume",
            Operation::Describe => "describe",
            Operation::Create => "create",
            Operation::Delete => "delete",
            Operation::Alter => "alter",
            Operation::DescribeConfigs => "describe-configs",
            Operation::AlterConfigs => "alter-configs",
        }
    }

    /// The operation written `name`.
    pub fn by_name(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|o| o.name() == name)
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// A set of operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Operations(u16);

impl Operations {
    /// Every operation (`all`).
    pub fn all() -> Self {
        Operation::ALL.into_iter().collect()
    }

    /// Whether `op` is in the set.
    pub fn contains(self, op: Operation) -> bool {
        self.0 & op.bit() != 0
    }

    /// Adds `op`.
    pub fn insert(&mut self, op: Operation) {
        self.0 |= op.bit();
    }
}

impl FromIterator<Operation> for Operations {
    fn from_iter<I: IntoIterator<Item = Operation>>(iter: I) -> Self {
        let mut set = Operations::default();
        for op in iter {
            set.insert(op);
        }
        set
    }
}

/// Every Kafka API that names topics, by key, and the operation it is.
/// An API that names topics is here, or a client could use it to go around
/// a policy (a test in `sluice-kafka` checks the proxy polices each).
pub const API_OPERATIONS: &[(i16, Operation)] = &[
    (0, Operation::Produce),          // Produce
    (1, Operation::Consume),          // Fetch
    (2, Operation::Describe),         // ListOffsets
    (3, Operation::Describe),         // Metadata
    (8, Operation::Consume),          // OffsetCommit
    (9, Operation::Describe),         // OffsetFetch
    (19, Operation::Create),          // CreateTopics
    (20, Operation::Delete),          // DeleteTopics
    (21, Operation::Delete),          // DeleteRecords
    (23, Operation::Describe),        // OffsetForLeaderEpoch
    (24, Operation::Produce),         // AddPartitionsToTxn
    (27, Operation::Produce),         // WriteTxnMarkers
    (28, Operation::Consume),         // TxnOffsetCommit
    (32, Operation::DescribeConfigs), // DescribeConfigs
    (33, Operation::AlterConfigs),    // AlterConfigs
    (34, Operation::Alter),           // AlterReplicaLogDirs
    (35, Operation::Describe),        // DescribeLogDirs
    (37, Operation::Alter),           // CreatePartitions
    (43, Operation::Alter),           // ElectLeaders
    (44, Operation::AlterConfigs),    // IncrementalAlterConfigs
    (45, Operation::Alter),           // AlterPartitionReassignments
    (46, Operation::Describe),        // ListPartitionReassignments
    (47, Operation::Consume),         // OffsetDelete
    (61, Operation::Describe),        // DescribeProducers
    (75, Operation::Describe),        // DescribeTopicPartitions
    (78, Operation::Consume),         // ShareFetch
    (79, Operation::Consume),         // ShareAcknowledge
    (90, Operation::Describe),        // DescribeShareGroupOffsets
    (91, Operation::Consume),         // AlterShareGroupOffsets
    (92, Operation::Consume),         // DeleteShareGroupOffsets
];

/// The operation an API is, when it names topics.
pub fn operation_of(api_key: i16) -> Option<Operation> {
    API_OPERATIONS
        .binary_search_by_key(&api_key, |(k, _)| *k)
        .ok()
        .map(|i| API_OPERATIONS[i].1)
}

/// Kafka's name of each API in [`API_OPERATIONS`] (for the docs).
pub fn api_names(op: Operation) -> Vec<&'static str> {
    API_OPERATIONS
        .iter()
        .filter(|(_, o)| *o == op)
        .map(|(k, _)| apis::name(*k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_names_known_apis() {
        assert!(API_OPERATIONS.windows(2).all(|w| w[0].0 < w[1].0));
        for (key, _) in API_OPERATIONS {
            assert!(apis::by_key(*key).is_some(), "api key {key}");
        }
        assert_eq!(operation_of(0), Some(Operation::Produce));
        assert_eq!(operation_of(18), None);
        assert_eq!(api_names(Operation::Create), ["CreateTopics"]);
    }

    #[test]
    fn names_round_trip_and_sets_hold_what_was_put() {
        for op in Operation::ALL {
            assert_eq!(Operation::by_name(op.name()), Some(op));
        }
        let set: Operations = [Operation::Produce, Operation::AlterConfigs]
            .into_iter()
            .collect();
        assert!(set.contains(Operation::AlterConfigs));
        assert!(!set.contains(Operation::Consume));
        assert!(
            Operation::ALL
                .iter()
                .all(|o| Operations::all().contains(*o))
        );
    }
}
