//! An attacker in one tenant who knows another tenant's topic id (from a
//! log, a screenshot, a shared dashboard) and names the topic by it, in raw
//! requests no client library would send that way.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_kafka::policy::Uuid;
use sluice_tests::kafka::{Conn, records};
use sluice_tests::peers::Tansu;

use super::two_tenants;

const UNKNOWN_TOPIC_ID: i16 = 100;

fn topic(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_owned()))
}

/// `team-b.secret`, with three records, and its id, as tansu knows them.
fn secret(tansu: &Tansu) -> Uuid {
    tansu.create_topic("team-b.secret", 1);
    let mut produce = ProduceRequest::default();
    produce.acks = -1;
    produce.timeout_ms = 5000;
    let mut partition = produce_request::PartitionProduceData::default();
    partition.records = Some(records(3));
    let mut data = produce_request::TopicProduceData::default();
    data.name = topic("team-b.secret");
    data.partition_data = vec![partition];
    produce.topic_data = vec![data];
    let mut direct = Conn::connect(&tansu.addr);
    let r: ProduceResponse = direct.call(ApiKey::Produce, 9, &produce);
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0, "{r:?}");
    let mut metadata = MetadataRequest::default();
    metadata.topics = Some(vec![
        metadata_request::MetadataRequestTopic::default().with_name(Some(topic("team-b.secret"))),
    ]);
    let r: MetadataResponse = direct.call(ApiKey::Metadata, 12, &metadata);
    r.topics[0].topic_id
}

fn fetch_by_id(id: Uuid) -> FetchRequest {
    let mut partition = fetch_request::FetchPartition::default();
    partition.partition_max_bytes = 1 << 20;
    let mut t = fetch_request::FetchTopic::default();
    t.topic_id = id;
    t.partitions = vec![partition];
    let mut fetch = FetchRequest::default();
    fetch.replica_id = BrokerId(-1);
    fetch.max_wait_ms = 100;
    fetch.max_bytes = 1 << 20;
    fetch.topics = vec![t];
    fetch
}

/// Fetch v13 and DeleteTopics v6 naming another tenant's topic by its id
/// get UNKNOWN_TOPIC_ID, before and after the tenant's own Metadata: the
/// records are not read and the topic is not deleted.
#[test]
fn another_tenants_topic_named_by_id_is_unknown() {
    let tansu = Tansu::start();
    let id = secret(&tansu);
    let (proxy, a, _) = two_tenants(&tansu);
    let mut conn = Conn::connect(&a);
    for learned in [false, true] {
        if learned {
            // Everything team-a may see: team-b's topic is not among it.
            let all: MetadataResponse =
                conn.call(ApiKey::Metadata, 12, &MetadataRequest::default());
            assert!(all.topics.iter().all(|t| t.topic_id != id), "{all:?}");
        }
        let r: FetchResponse = conn.call(ApiKey::Fetch, 13, &fetch_by_id(id));
        let got: Vec<(i16, usize)> = (r.responses.iter().flat_map(|t| &t.partitions))
            .map(|p| (p.error_code, p.records.as_ref().map_or(0, |r| r.len())))
            .collect();
        assert_eq!(got, [(UNKNOWN_TOPIC_ID, 0)], "learned: {learned}: {r:?}");

        let mut delete = DeleteTopicsRequest::default();
        delete.timeout_ms = 5000;
        let mut state = delete_topics_request::DeleteTopicState::default();
        state.topic_id = id;
        delete.topics = vec![state];
        let r: DeleteTopicsResponse = conn.call(ApiKey::DeleteTopics, 6, &delete);
        let codes: Vec<i16> = r.responses.iter().map(|t| t.error_code).collect();
        assert_eq!(codes, [UNKNOWN_TOPIC_ID], "learned: {learned}: {r:?}");
    }
    let mut direct = Conn::connect(&tansu.addr);
    let all: MetadataResponse = direct.call(ApiKey::Metadata, 12, &MetadataRequest::default());
    assert!(
        all.topics.iter().any(|t| t.topic_id == id),
        "team-b's topic is still there"
    );
    proxy.assert_clean_logs();
}
