//! Consumer groups and transactional ids as resources of a topic policy,
//! beside topics, and the one table of which Kafka API does which
//! operation to them (Kafka's ACLs on the GROUP and TRANSACTIONAL_ID
//! resources). The proxy judges exactly the APIs listed here, and only
//! where some rule names that kind of resource: a policy without rules on
//! groups leaves groups to the broker, as it always did.

use super::Operation;
use crate::apis;

/// A kind of named resource besides topics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceKind {
    /// A consumer group (classic, consumer, share).
    Group,
    /// A transactional id.
    TransactionalId,
}

impl ResourceKind {
    /// Both kinds.
    pub const EVERY: [ResourceKind; 2] = [ResourceKind::Group, ResourceKind::TransactionalId];

    /// The key a rule lists them under.
    pub fn key(self) -> &'static str {
        match self {
            ResourceKind::Group => "groups",
            ResourceKind::TransactionalId => "transactionalIds",
        }
    }

    /// How the audit and the metrics prefix a name of this kind.
    pub fn prefix(self) -> &'static str {
        match self {
            ResourceKind::Group => "group:",
            ResourceKind::TransactionalId => "transactional-id:",
        }
    }

    /// The operations done to resources of this kind (Kafka's READ,
    /// DESCRIBE and DELETE on a group; WRITE and DESCRIBE on a
    /// transactional id).
    pub fn operations(self) -> &'static [Operation] {
        match self {
            ResourceKind::Group => &[Operation::Consume, Operation::Describe, Operation::Delete],
            ResourceKind::TransactionalId => &[Operation::Produce, Operation::Describe],
        }
    }
}

/// Every Kafka API that names groups or transactional ids, by key, with
/// the kind and the operation it does to each. An API listed twice names
/// both kinds (FindCoordinator names either, by its key type). Kafka's
/// ListGroups and ListTransactions name none: they list what exists.
pub const API_RESOURCES: &[(i16, ResourceKind, Operation)] = {
    use Operation::{Consume, Delete, Describe, Produce};
    use ResourceKind::{Group as G, TransactionalId as T};
    &[
        (8, G, Consume),   // OffsetCommit
        (9, G, Describe),  // OffsetFetch
        (10, G, Describe), // FindCoordinator (key type 0)
        (10, T, Describe), // FindCoordinator (key type 1)
        (11, G, Consume),  // JoinGroup
        (12, G, Consume),  // Heartbeat
        (13, G, Consume),  // LeaveGroup
        (14, G, Consume),  // SyncGroup
        (15, G, Describe), // DescribeGroups
        (22, T, Produce),  // InitProducerId
        (24, T, Produce),  // AddPartitionsToTxn
        (25, G, Consume),  // AddOffsetsToTxn
        (25, T, Produce),  // AddOffsetsToTxn
        (26, T, Produce),  // EndTxn
        (28, G, Consume),  // TxnOffsetCommit
        (28, T, Produce),  // TxnOffsetCommit
        (42, G, Delete),   // DeleteGroups
        (47, G, Delete),   // OffsetDelete
        (65, T, Describe), // DescribeTransactions
        (68, G, Consume),  // ConsumerGroupHeartbeat
        (69, G, Describe), // ConsumerGroupDescribe
        (76, G, Consume),  // ShareGroupHeartbeat
        (77, G, Describe), // ShareGroupDescribe
        (78, G, Consume),  // ShareFetch
        (79, G, Consume),  // ShareAcknowledge
        (90, G, Describe), // DescribeShareGroupOffsets
        (91, G, Consume),  // AlterShareGroupOffsets
        (92, G, Delete),   // DeleteShareGroupOffsets
    ]
};

/// The operation `api_key` does to resources of `kind`, if it names any.
pub fn resource_operation(api_key: i16, kind: ResourceKind) -> Option<Operation> {
    (API_RESOURCES.iter())
        .find(|(k, r, _)| *k == api_key && *r == kind)
        .map(|(_, _, op)| *op)
}

/// Whether `api_key` names groups or transactional ids.
pub fn names_resources(api_key: i16) -> bool {
    API_RESOURCES.iter().any(|(k, _, _)| *k == api_key)
}

/// Kafka's name of each API in [`API_RESOURCES`] that does `op` to `kind`
/// (for the docs).
pub fn resource_api_names(kind: ResourceKind, op: Operation) -> Vec<&'static str> {
    (API_RESOURCES.iter())
        .filter(|(_, r, o)| *r == kind && *o == op)
        .map(|(k, _, _)| apis::name(*k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_names_known_apis_and_operations_of_its_kind() {
        assert!(API_RESOURCES.windows(2).all(|w| w[0].0 <= w[1].0));
        for (key, kind, op) in API_RESOURCES {
            assert!(apis::by_key(*key).is_some(), "api key {key}");
            assert!(kind.operations().contains(op), "{key}: {op:?} on {kind:?}");
        }
        assert_eq!(
            resource_operation(11, ResourceKind::Group),
            Some(Operation::Consume)
        );
        assert_eq!(resource_operation(11, ResourceKind::TransactionalId), None);
        assert!(names_resources(10) && !names_resources(0));
        assert_eq!(
            resource_api_names(ResourceKind::Group, Operation::Delete),
            ["DeleteGroups", "OffsetDelete", "DeleteShareGroupOffsets"]
        );
    }
}
