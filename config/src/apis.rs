//! Every Kafka API the proxy knows, by key and name, and what the proxy does
//! with it: the one table that the `deny-apis` filter (its validation here,
//! its answers in the proxy), the address rewriter and
//! `scripts/gen-wire-schemas` all read. Adding an API the proxy denies or
//! rewrites is a row here plus its handler in `sluice-proxy`; a test there
//! fails until both exist, and another compares this table with
//! kafka-protocol's own list of APIs.
//!
//! Plain data: validation needs the names, not the wire format, so
//! kafka-protocol stays out of this crate.

/// What the proxy does with an API's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// Forwarded as bytes both ways.
    Forwarded,
    /// Forwarded, and `deny-apis` may list it: the proxy can answer a request
    /// with an error itself, naming every resource it carries.
    Deniable,
    /// Responses carry broker endpoints, rewritten to the proxy's own from
    /// this version on (older versions carry none). Those of Produce and
    /// Fetch (KIP-951) sit in the response's own tagged fields, after
    /// everything else: a Fetch response's records stream past the proxy
    /// while only its last bytes are rewritten (`sluice-kafka`'s
    /// `streamed`), so every version is offered.
    Rewritten {
        /// First version whose responses carry endpoints.
        since: i16,
    },
    /// ApiVersions: the response is decoded and capped to what the proxy can
    /// decode.
    Capped,
}

/// One Kafka API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KafkaApi {
    /// Its key on the wire.
    pub key: i16,
    /// Kafka's name for it (`DeleteTopics`), as the configuration writes it.
    pub name: &'static str,
    /// What the proxy does with it.
    pub handling: Handling,
}

impl KafkaApi {
    /// Whether `deny-apis` may list it.
    pub fn deniable(&self) -> bool {
        self.handling == Handling::Deniable
    }

    /// Whether responses of `version` carry broker endpoints to rewrite.
    pub fn rewritten_at(&self, version: i16) -> bool {
        matches!(self.handling, Rewritten { since } if version >= since)
    }
}

const fn api(key: i16, name: &'static str, handling: Handling) -> KafkaApi {
    KafkaApi {
        key,
        name,
        handling,
    }
}

use Handling::{Capped, Deniable, Forwarded, Rewritten};

/// Every API, sorted by key (kafka-protocol 0.18's list).
pub const KAFKA_APIS: &[KafkaApi] = &[
    api(0, "Produce", Rewritten { since: 10 }),
    api(1, "Fetch", Rewritten { since: 16 }),
    api(2, "ListOffsets", Forwarded),
    api(3, "Metadata", Rewritten { since: 0 }),
    api(8, "OffsetCommit", Forwarded),
    api(9, "OffsetFetch", Forwarded),
    api(10, "FindCoordinator", Rewritten { since: 0 }),
    api(11, "JoinGroup", Forwarded),
    api(12, "Heartbeat", Forwarded),
    api(13, "LeaveGroup", Forwarded),
    api(14, "SyncGroup", Forwarded),
    api(15, "DescribeGroups", Forwarded),
    api(16, "ListGroups", Forwarded),
    api(17, "SaslHandshake", Forwarded),
    api(18, "ApiVersions", Capped),
    api(19, "CreateTopics", Deniable),
    api(20, "DeleteTopics", Deniable),
    api(21, "DeleteRecords", Deniable),
    api(22, "InitProducerId", Forwarded),
    api(23, "OffsetForLeaderEpoch", Forwarded),
    api(24, "AddPartitionsToTxn", Forwarded),
    api(25, "AddOffsetsToTxn", Forwarded),
    api(26, "EndTxn", Forwarded),
    api(27, "WriteTxnMarkers", Forwarded),
    api(28, "TxnOffsetCommit", Forwarded),
    api(29, "DescribeAcls", Forwarded),
    api(30, "CreateAcls", Deniable),
    api(31, "DeleteAcls", Deniable),
    api(32, "DescribeConfigs", Forwarded),
    api(33, "AlterConfigs", Deniable),
    api(34, "AlterReplicaLogDirs", Forwarded),
    api(35, "DescribeLogDirs", Forwarded),
    api(36, "SaslAuthenticate", Forwarded),
    api(37, "CreatePartitions", Deniable),
    api(38, "CreateDelegationToken", Forwarded),
    api(39, "RenewDelegationToken", Forwarded),
    api(40, "ExpireDelegationToken", Forwarded),
    api(41, "DescribeDelegationToken", Forwarded),
    api(42, "DeleteGroups", Deniable),
    api(43, "ElectLeaders", Forwarded),
    api(44, "IncrementalAlterConfigs", Deniable),
    api(45, "AlterPartitionReassignments", Forwarded),
    api(46, "ListPartitionReassignments", Forwarded),
    api(47, "OffsetDelete", Forwarded),
    api(48, "DescribeClientQuotas", Forwarded),
    api(49, "AlterClientQuotas", Forwarded),
    api(50, "DescribeUserScramCredentials", Forwarded),
    api(51, "AlterUserScramCredentials", Forwarded),
    api(52, "Vote", Rewritten { since: 0 }),
    api(53, "BeginQuorumEpoch", Rewritten { since: 0 }),
    api(54, "EndQuorumEpoch", Rewritten { since: 0 }),
    api(55, "DescribeQuorum", Rewritten { since: 0 }),
    api(56, "AlterPartition", Forwarded),
    api(57, "UpdateFeatures", Forwarded),
    api(58, "Envelope", Forwarded),
    api(59, "FetchSnapshot", Rewritten { since: 0 }),
    api(60, "DescribeCluster", Rewritten { since: 0 }),
    api(61, "DescribeProducers", Forwarded),
    api(62, "BrokerRegistration", Forwarded),
    api(63, "BrokerHeartbeat", Forwarded),
    api(64, "UnregisterBroker", Forwarded),
    api(65, "DescribeTransactions", Forwarded),
    api(66, "ListTransactions", Forwarded),
    api(67, "AllocateProducerIds", Forwarded),
    api(68, "ConsumerGroupHeartbeat", Forwarded),
    api(69, "ConsumerGroupDescribe", Forwarded),
    api(70, "ControllerRegistration", Forwarded),
    api(71, "GetTelemetrySubscriptions", Forwarded),
    api(72, "PushTelemetry", Forwarded),
    api(73, "AssignReplicasToDirs", Forwarded),
    api(74, "ListConfigResources", Forwarded),
    api(75, "DescribeTopicPartitions", Forwarded),
    api(76, "ShareGroupHeartbeat", Forwarded),
    api(77, "ShareGroupDescribe", Forwarded),
    api(78, "ShareFetch", Rewritten { since: 0 }),
    api(79, "ShareAcknowledge", Rewritten { since: 0 }),
    api(80, "AddRaftVoter", Forwarded),
    api(81, "RemoveRaftVoter", Forwarded),
    api(82, "UpdateRaftVoter", Forwarded),
    api(83, "InitializeShareGroupState", Forwarded),
    api(84, "ReadShareGroupState", Forwarded),
    api(85, "WriteShareGroupState", Forwarded),
    api(86, "DeleteShareGroupState", Forwarded),
    api(87, "ReadShareGroupStateSummary", Forwarded),
    api(90, "DescribeShareGroupOffsets", Forwarded),
    api(91, "AlterShareGroupOffsets", Forwarded),
    api(92, "DeleteShareGroupOffsets", Forwarded),
];

/// The API with this key.
pub fn by_key(key: i16) -> Option<&'static KafkaApi> {
    KAFKA_APIS
        .binary_search_by_key(&key, |a| a.key)
        .ok()
        .map(|i| &KAFKA_APIS[i])
}

/// The API called `name`, exactly as Kafka spells it.
pub fn by_name(name: &str) -> Option<&'static KafkaApi> {
    KAFKA_APIS.iter().find(|a| a.name == name)
}

/// Kafka's name for an API key, or `Unknown`.
pub fn name(key: i16) -> &'static str {
    by_key(key).map_or("Unknown", |a| a.name)
}

/// The APIs `deny-apis` may list.
pub fn deniable() -> impl Iterator<Item = &'static KafkaApi> {
    KAFKA_APIS.iter().filter(|a| a.deniable())
}

/// The APIs whose responses carry broker endpoints.
pub fn rewritten() -> impl Iterator<Item = &'static KafkaApi> {
    KAFKA_APIS
        .iter()
        .filter(|a| matches!(a.handling, Rewritten { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_by_key_without_duplicates() {
        assert!(KAFKA_APIS.windows(2).all(|w| w[0].key < w[1].key));
        let mut names: Vec<_> = KAFKA_APIS.iter().map(|a| a.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KAFKA_APIS.len());
    }

    #[test]
    fn lookups_by_key_and_name_agree() {
        for a in KAFKA_APIS {
            assert_eq!(by_key(a.key), Some(a));
            assert_eq!(by_name(a.name), Some(a));
        }
        assert_eq!(name(20), "DeleteTopics");
        assert_eq!(name(4), "Unknown");
        assert_eq!(name(-1), "Unknown");
        assert!(by_name("deleteTopics").is_none());
    }

    #[test]
    fn produce_and_fetch_carry_endpoints_only_in_newer_versions() {
        let produce = by_name("Produce").unwrap();
        assert!(!produce.rewritten_at(9));
        assert!(produce.rewritten_at(10));
        let fetch = by_name("Fetch").unwrap();
        assert!(!fetch.rewritten_at(15));
        assert!(fetch.rewritten_at(16));
        assert!(by_name("Metadata").unwrap().rewritten_at(0));
        assert!(!by_name("DeleteTopics").unwrap().rewritten_at(6));
    }
}
