//! What the proxy learns from the responses it rewrites: broker endpoints,
//! never a KRaft controller's; and a Fetch whose NodeEndpoints tag is empty
//! passes as it came.

use kafka_protocol::messages::DescribeQuorumResponse;
use kafka_protocol::messages::describe_quorum_response::{Listener, Node};

use super::*;

/// KRaft combined mode: node 1 is a broker on 9092 and a controller on
/// 9093. DescribeQuorum names the controller listener; a client later sent
/// to node 1's broker port must still reach 9092.
#[test]
fn describe_quorum_endpoints_are_rewritten_but_never_learned() {
    let mut listener = Listener::default();
    listener.name = StrBytes::from_static_str("CONTROLLER");
    listener.host = StrBytes::from_static_str("kafka-1.upstream");
    listener.port = 9093;
    let mut node = Node::default();
    node.node_id = BrokerId(1);
    node.listeners = vec![listener];
    let mut response = DescribeQuorumResponse::default();
    response.nodes = vec![node];
    for version in 2..=ApiKey::DescribeQuorum.valid_versions().max {
        let input = frame(ApiKey::DescribeQuorum, version, &response);
        let out =
            rewrite_response(&input, &req(ApiKey::DescribeQuorum, version), &advertised()).unwrap();
        assert!(out.changed);
        assert_eq!(
            out.learned,
            [],
            "v{version}: a controller endpoint was learned"
        );
        assert!(
            !out.frame.to_bytes().windows(8).any(|w| w == b"upstream"),
            "v{version}: the upstream host reached the client"
        );
    }
}

#[test]
fn broker_endpoints_are_learned() {
    let mut broker = metadata_response::MetadataResponseBroker::default();
    broker.node_id = BrokerId(1);
    broker.host = StrBytes::from_static_str("kafka-1.upstream");
    broker.port = 9092;
    let mut response = MetadataResponse::default();
    response.brokers = vec![broker];
    let input = frame(ApiKey::Metadata, 12, &response);
    let out = rewrite_response(&input, &req(ApiKey::Metadata, 12), &advertised()).unwrap();
    assert_eq!(
        out.learned,
        [Learned {
            node_id: 1,
            host: "kafka-1.upstream".to_owned(),
            port: 9092
        }]
    );
}

/// Some brokers (tansu) send Fetch's NodeEndpoints tag in every response,
/// empty: nothing to rewrite, so the frame passes as it came, not decoded
/// into a copy of its megabytes of records.
#[test]
fn an_empty_node_endpoints_tag_leaves_the_frame_as_it_came() {
    let mut response = FetchResponse::default();
    response.session_id = 3;
    let plain = frame(ApiKey::Fetch, 16, &response);
    assert_eq!(plain.last(), Some(&0), "no tagged field");
    // One tagged field: tag 0 (NodeEndpoints), 1 byte, an empty compact array.
    let mut body = plain[4..plain.len() - 1].to_vec();
    body.extend_from_slice(&[1, 0, 1, 1]);
    let mut tagged = (body.len() as i32).to_be_bytes().to_vec();
    tagged.extend_from_slice(&body);
    let tagged = Bytes::from(tagged);
    let out = rewrite_response(&tagged, &req(ApiKey::Fetch, 16), &advertised()).unwrap();
    assert!(!out.changed);
    assert_eq!(
        out.frame.to_bytes().as_ptr(),
        tagged.as_ptr(),
        "the same bytes, not a copy"
    );
}

/// Metadata v10 on carries each topic's id: the names of the ids are handed
/// back for the topic policy (a topic without an id or a name is not).
#[test]
fn metadata_topic_ids_and_names_are_learned() {
    use sluice_kafka::policy::{TopicIds, Uuid};
    let topic = |name: Option<&str>, id: u128| {
        let mut t = metadata_response::MetadataResponseTopic::default();
        t.name = name.map(|n| StrBytes::from_string(n.to_owned()).into());
        t.topic_id = Uuid::from_u128(id);
        t
    };
    for version in 10..=ApiKey::Metadata.valid_versions().max {
        let mut response = metadata(version, &UPSTREAM[..1]);
        response.topics = vec![
            topic(Some("orders"), 1),
            topic(Some("no-id"), 0),
            topic(None, 3),
        ];
        let input = frame(ApiKey::Metadata, version, &response);
        let out = rewrite_response(&input, &req(ApiKey::Metadata, version), &advertised()).unwrap();
        assert_eq!(
            out.topic_ids,
            [(Uuid::from_u128(1), "orders".to_owned())],
            "v{version}"
        );
        let ids = TopicIds::default();
        ids.learn(&out.topic_ids);
        assert_eq!(ids.name(Uuid::from_u128(1)).as_deref(), Some("orders"));
    }
}
