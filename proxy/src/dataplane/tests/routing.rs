//! Connection limits across generations, and which addresses are learned.

use kafka_protocol::messages::describe_quorum_response::{Listener, Node};
use kafka_protocol::messages::{ApiKey, BrokerId, DescribeQuorumRequest, DescribeQuorumResponse};
use kafka_protocol::protocol::StrBytes;
use tokio::io::AsyncWriteExt;

use super::*;

/// A reload replaced generation 1 with generation 2 while 1 drains: the
/// cluster may hold `maxConnections` in all, not that many per generation.
#[tokio::test]
async fn max_connections_counts_every_generation_of_the_cluster() {
    let metrics = Arc::new(Metrics::new());
    let config = cluster_config(
        "127.0.0.1:9".parse().unwrap(),
        "    limits: { maxConnections: 2 }\n",
    );
    let old = ClusterRuntime::prepare(&config, 1, &metrics, Gauge::default()).unwrap();
    let mut held: Vec<_> = (0..2)
        .map(|_| old.admit().expect("within the limit"))
        .collect();
    old.begin_drain(Duration::ZERO);

    let new = ClusterRuntime::prepare(&config, 2, &metrics, Gauge::default()).unwrap();
    assert!(
        new.admit().is_none(),
        "the draining generation's 2 connections count against the new one's limit of 2"
    );
    drop(held.pop());
    let admitted = new.admit().expect("one connection closed: room for one");
    assert!(new.admit().is_none());
    assert_eq!((old.active_connections(), new.active_connections()), (1, 1));
    assert_eq!(
        metric(&metrics, "sluice_connections_active{cluster=\"orders\"}"),
        2.0
    );
    drop(admitted);
    assert_eq!(new.active_connections(), 0);
}

/// KRaft combined mode: node 1's controller listener (9093) is named by
/// DescribeQuorum; a client later sent to node 1's broker port must reach
/// the broker listener, so the controller's address is not learned.
#[tokio::test]
async fn describe_quorum_endpoints_are_not_learned_as_broker_addresses() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    client
        .write_all(&request(
            ApiKey::DescribeQuorum,
            2,
            1,
            &DescribeQuorumRequest::default(),
        ))
        .await
        .unwrap();
    read_frame(&mut upstream).await;
    let mut listener = Listener::default();
    listener.name = StrBytes::from_static_str("CONTROLLER");
    listener.host = StrBytes::from_static_str("controller.upstream");
    listener.port = 9093;
    let mut node = Node::default();
    node.node_id = BrokerId(1);
    node.listeners = vec![listener];
    let mut answer = DescribeQuorumResponse::default();
    answer.nodes = vec![node];
    upstream
        .write_all(&response(ApiKey::DescribeQuorum, 2, 1, &answer))
        .await
        .unwrap();
    let got = read_frame(&mut client).await;
    assert!(
        !got.windows(8).any(|w| w == b"upstream"),
        "the controller's address reached the client"
    );
    assert_eq!(
        rig.cluster.node(1),
        None,
        "node 1's broker port would lead to its controller listener"
    );
}
