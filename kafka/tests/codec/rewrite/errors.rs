//! The error codes a rewritten response carries are handed back (the
//! proxy counts them per cluster, API and error): distinct, never 0, and
//! those the rewrite itself puts in (a coordinator the proxy does not
//! serve) included.

use super::*;

/// Kafka's UNKNOWN_TOPIC_OR_PARTITION.
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
/// Kafka's LEADER_NOT_AVAILABLE.
const LEADER_NOT_AVAILABLE: i16 = 5;
/// Kafka's COORDINATOR_NOT_AVAILABLE.
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
/// Kafka's CLUSTER_AUTHORIZATION_FAILED.
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;

#[test]
fn metadata_topic_and_partition_errors_are_handed_back_once_each() {
    let mut missing = metadata_response::MetadataResponseTopic::default();
    missing.name = Some(StrBytes::from_static_str("nope").into());
    missing.error_code = UNKNOWN_TOPIC_OR_PARTITION;
    let mut leaderless = metadata_response::MetadataResponsePartition::default();
    leaderless.error_code = LEADER_NOT_AVAILABLE;
    let mut fine = metadata_response::MetadataResponseTopic::default();
    fine.name = Some(StrBytes::from_static_str("orders").into());
    fine.partitions = vec![
        leaderless.clone(),
        metadata_response::MetadataResponsePartition::default(),
        leaderless,
    ];
    let mut response = MetadataResponse::default();
    response.topics = vec![missing, fine];
    for version in [1, 9, 12] {
        let input = frame(ApiKey::Metadata, version, &response);
        let out = rewrite_response(&input, &req(ApiKey::Metadata, version), &advertised()).unwrap();
        assert_eq!(
            out.errors,
            [UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE],
            "v{version}"
        );
    }
    let clean = frame(ApiKey::Metadata, 12, &MetadataResponse::default());
    let out = rewrite_response(&clean, &req(ApiKey::Metadata, 12), &advertised()).unwrap();
    assert!(out.errors.is_empty());
}

#[test]
fn a_coordinator_the_proxy_does_not_serve_is_an_error_handed_back() {
    let mut response = FindCoordinatorResponse::default();
    response.node_id = BrokerId(7);
    response.host = StrBytes::from_static_str("kafka-7.upstream");
    response.port = 9094;
    let input = frame(ApiKey::FindCoordinator, 3, &response);
    let out = rewrite_response(&input, &req(ApiKey::FindCoordinator, 3), &advertised()).unwrap();
    assert_eq!(out.errors, [COORDINATOR_NOT_AVAILABLE]);

    let mut served = find_coordinator_response::Coordinator::default();
    served.node_id = BrokerId(1);
    served.host = StrBytes::from_static_str("kafka-1.upstream");
    served.port = 9092;
    let mut response = FindCoordinatorResponse::default();
    response.coordinators = vec![served];
    let input = frame(ApiKey::FindCoordinator, 4, &response);
    let out = rewrite_response(&input, &req(ApiKey::FindCoordinator, 4), &advertised()).unwrap();
    assert!(out.errors.is_empty());
}

#[test]
fn describe_cluster_errors_are_handed_back() {
    let mut response = DescribeClusterResponse::default();
    response.error_code = CLUSTER_AUTHORIZATION_FAILED;
    let input = frame(ApiKey::DescribeCluster, 0, &response);
    let out = rewrite_response(&input, &req(ApiKey::DescribeCluster, 0), &advertised()).unwrap();
    assert_eq!(out.errors, [CLUSTER_AUTHORIZATION_FAILED]);
}
