//! The operations a topic policy names, and the one table of which Kafka
//! API is which operation (close to Kafka's ACL model). The proxy polices
//! exactly the APIs listed here; the docs' table is printed from it.
//!
//! Most operations are done to topics; three are done to the cluster
//! (Kafka's ACLs on the CLUSTER resource): they are judged without a topic,
//! only by rules that name them (`all` names the topic operations).

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
    /// The cluster: change brokers' configs, ACLs, quotas, credentials,
    /// replicas and leaders; the inter-broker and controller APIs.
    AlterCluster,
    /// The cluster: read brokers' configs, ACLs, quotas, credentials, log
    /// dirs and reassignments.
    DescribeCluster,
    /// Delete consumer groups (a cluster operation until groups are
    /// resources of their own).
    DeleteGroups,
}

impl Operation {
    /// Every topic operation, in the order the docs list them: what `all`
    /// names.
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

    /// The cluster operations: judged without a topic, by the rules that
    /// name them.
    pub const CLUSTER: [Operation; 3] = [
        Operation::AlterCluster,
        Operation::DescribeCluster,
        Operation::DeleteGroups,
    ];

    /// Every operation: the topic ones, then the cluster ones.
    pub const EVERY: [Operation; 11] = [
        Operation::Produce,
        Operation::Consume,
        Operation::Describe,
        Operation::Create,
        Operation::Delete,
        Operation::Alter,
        Operation::DescribeConfigs,
        Operation::AlterConfigs,
        Operation::AlterCluster,
        Operation::DescribeCluster,
        Operation::DeleteGroups,
    ];

    /// Whether it is done to the cluster rather than to topics.
    pub fn is_cluster(self) -> bool {
        Operation::CLUSTER.contains(&self)
    }

    /// Whether it changes the cluster's administration (topics, their
    /// records, partitions and configs, groups, ACLs, quotas, brokers):
    /// each one that goes through leaves a data-plane audit line.
    pub fn audited(self) -> bool {
        matches!(
            self,
            Operation::Create
                | Operation::Delete
                | Operation::Alter
                | Operation::AlterConfigs
                | Operation::AlterCluster
                | Operation::DeleteGroups
        )
    }

    /// The cluster operation the configs APIs' other resources (BROKER,
    /// BROKER_LOGGER, ...: every one but TOPIC) are judged as, for an API of
    /// this operation: `describe-cluster` beside `describe-configs`,
    /// `alter-cluster` beside `alter-configs`.
    pub fn on_other_resources(self) -> Option<Operation> {
        match self {
            Operation::DescribeConfigs => Some(Operation::DescribeCluster),
            Operation::AlterConfigs => Some(Operation::AlterCluster),
            _ => None,
        }
    }

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
            Operation::AlterCluster => "alter-cluster",
            Operation::DescribeCluster => "describe-cluster",
            Operation::DeleteGroups => "delete-groups",
        }
    }

    /// The operation written `name`.
    pub fn by_name(name: &str) -> Option<Operation> {
        Operation::EVERY.into_iter().find(|o| o.name() == name)
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// A set of operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Operations(u16);

impl Operations {
    /// Every topic operation (`all`).
    pub fn all() -> Self {
        Operation::ALL.into_iter().collect()
    }

    /// Whether `op` is in the set.
    pub fn contains(self, op: Operation) -> bool {
        self.0 & op.bit() != 0
    }

    /// Whether it holds a cluster operation.
    pub fn any_cluster(self) -> bool {
        Operation::CLUSTER.iter().any(|op| self.contains(*op))
    }

    /// Whether it holds a topic operation.
    pub fn any_topic(self) -> bool {
        Operation::ALL.iter().any(|op| self.contains(*op))
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

/// Every Kafka API that names topics or acts on the cluster, by key, and
/// the operation it is. An API that names topics is here, or a client could
/// use it to go around a policy (a test in `sluice-kafka` checks the proxy
/// polices each); so is every API that needs a permission on Kafka's
/// CLUSTER resource, but DescribeCluster (every admin client asks it). The
/// configs APIs (32, 33, 44) are topic operations whose other resources are
/// judged as a cluster one ([`Operation::on_other_resources`]).
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
    (27, Operation::AlterCluster),    // WriteTxnMarkers
    (28, Operation::Consume),         // TxnOffsetCommit
    (29, Operation::DescribeCluster), // DescribeAcls
    (30, Operation::AlterCluster),    // CreateAcls
    (31, Operation::AlterCluster),    // DeleteAcls
    (32, Operation::DescribeConfigs), // DescribeConfigs
    (33, Operation::AlterConfigs),    // AlterConfigs
    (34, Operation::AlterCluster),    // AlterReplicaLogDirs
    (35, Operation::DescribeCluster), // DescribeLogDirs
    (37, Operation::Alter),           // CreatePartitions
    (42, Operation::DeleteGroups),    // DeleteGroups
    (43, Operation::AlterCluster),    // ElectLeaders
    (44, Operation::AlterConfigs),    // IncrementalAlterConfigs
    (45, Operation::AlterCluster),    // AlterPartitionReassignments
    (46, Operation::DescribeCluster), // ListPartitionReassignments
    (47, Operation::Consume),         // OffsetDelete
    (48, Operation::DescribeCluster), // DescribeClientQuotas
    (49, Operation::AlterCluster),    // AlterClientQuotas
    (50, Operation::DescribeCluster), // DescribeUserScramCredentials
    (51, Operation::AlterCluster),    // AlterUserScramCredentials
    (52, Operation::AlterCluster),    // Vote
    (53, Operation::AlterCluster),    // BeginQuorumEpoch
    (54, Operation::AlterCluster),    // EndQuorumEpoch
    (55, Operation::DescribeCluster), // DescribeQuorum
    (56, Operation::AlterCluster),    // AlterPartition
    (57, Operation::AlterCluster),    // UpdateFeatures
    (58, Operation::AlterCluster),    // Envelope
    (59, Operation::AlterCluster),    // FetchSnapshot
    (61, Operation::Describe),        // DescribeProducers
    (62, Operation::AlterCluster),    // BrokerRegistration
    (63, Operation::AlterCluster),    // BrokerHeartbeat
    (64, Operation::AlterCluster),    // UnregisterBroker
    (67, Operation::AlterCluster),    // AllocateProducerIds
    (70, Operation::AlterCluster),    // ControllerRegistration
    (73, Operation::AlterCluster),    // AssignReplicasToDirs
    (74, Operation::DescribeCluster), // ListConfigResources
    (75, Operation::Describe),        // DescribeTopicPartitions
    (78, Operation::Consume),         // ShareFetch
    (79, Operation::Consume),         // ShareAcknowledge
    (80, Operation::AlterCluster),    // AddRaftVoter
    (81, Operation::AlterCluster),    // RemoveRaftVoter
    (82, Operation::AlterCluster),    // UpdateRaftVoter
    (83, Operation::AlterCluster),    // InitializeShareGroupState
    (84, Operation::AlterCluster),    // ReadShareGroupState
    (85, Operation::AlterCluster),    // WriteShareGroupState
    (86, Operation::AlterCluster),    // DeleteShareGroupState
    (87, Operation::AlterCluster),    // ReadShareGroupStateSummary
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
        for op in Operation::EVERY {
            assert_eq!(Operation::by_name(op.name()), Some(op));
        }
        assert!(Operation::CLUSTER.iter().all(|op| op.is_cluster()));
        assert!(!Operation::ALL.iter().any(|op| op.is_cluster()));
        assert!(!Operations::all().any_cluster(), "`all` names topics only");
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
