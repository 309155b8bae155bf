//! A tenant's Produce streams: a 24 MiB request through a tenant's cluster
//! grows the proxy by a fraction of its size, as on a cluster without
//! tenancy, where holding it whole to rename it would grow it by all of it.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_tests::kafka::{Conn, sized_records};
use sluice_tests::peers::Tansu;

use super::two_tenants;

const MIB: u64 = 1 << 20;

#[test]
fn a_tenants_large_produce_streams_through_the_proxy() {
    let tansu = Tansu::start();
    tansu.create_topic("team-a.big", 1);
    let (proxy, a, _) = two_tenants(&tansu);
    let batch = sized_records(384, 64 * 1024);
    let mut partition = produce_request::PartitionProduceData::default();
    partition.records = Some(batch.clone());
    let mut data = produce_request::TopicProduceData::default();
    data.name = TopicName(StrBytes::from_static_str("big"));
    data.partition_data = vec![partition];
    let mut produce = ProduceRequest::default();
    produce.acks = -1;
    produce.timeout_ms = 30_000;
    produce.topic_data = vec![data];
    let before = proxy.peak_rss();
    for version in [8, 9] {
        let mut conn = Conn::connect(&a);
        let r: ProduceResponse = conn.call(ApiKey::Produce, version, &produce);
        let codes: Vec<i16> = (r.responses.iter().flat_map(|t| &t.partition_responses))
            .map(|p| p.error_code)
            .collect();
        assert_eq!(codes, [0], "v{version}: {r:?}");
        assert_eq!(r.responses[0].name.0.as_str(), "big", "v{version}");
    }
    let grown = proxy.peak_rss().saturating_sub(before);
    assert!(
        grown < batch.len() as u64 / 2,
        "the proxy grew {} MiB for a {} MiB request",
        grown / MIB,
        batch.len() as u64 / MIB
    );
    proxy.assert_clean_logs();
}
