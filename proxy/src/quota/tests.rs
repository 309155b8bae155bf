use std::num::{NonZeroU32, NonZeroU64};

use super::*;

fn spec(cluster: ByteRates, per_client_id: ByteRates, max_client_ids: u32) -> QuotaSpec {
    QuotaSpec {
        cluster,
        per_client_id,
        connections_per_second: None,
        max_client_ids,
    }
}

fn produce(bytes: u64) -> ByteRates {
    ByteRates {
        produce: NonZeroU64::new(bytes),
        fetch: None,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn the_tighter_of_the_cluster_and_the_client_quota_wins() {
    // (cluster quota, per-client quota, bytes, expected throttle ms):
    // 11 kB over Kafka's 10 s is 1.1 kB/s.
    let table = [
        (None, None, 11_000, 0),
        (Some(1_000), None, 11_000, 1_000),
        (None, Some(1_000), 11_000, 1_000),
        (Some(1_000), Some(550), 11_000, 5_000),
        (Some(550), Some(1_000), 11_000, 5_000),
        (Some(2_000), Some(2_000), 11_000, 0),
    ];
    for (i, (cluster, client, bytes, expected)) in table.into_iter().enumerate() {
        let quotas = Quotas::default();
        let q = quotas.cluster("orders");
        let s = spec(
            produce(cluster.unwrap_or(0)),
            produce(client.unwrap_or(0)),
            10,
        );
        let c = q.client(Some("app"), s.max_client_ids);
        let got = q.record(&s, &c, Kind::Produce, bytes, Instant::now());
        assert_eq!(got.as_millis() as u64, expected, "row {i}");
    }
}

#[test]
fn a_per_client_quota_leaves_other_client_ids_alone() {
    let quotas = Quotas::default();
    let q = quotas.cluster("orders");
    let s = spec(ByteRates::default(), produce(1_000), 10);
    let now = Instant::now();
    let (a, b) = (q.client(Some("a"), 10), q.client(Some("b"), 10));
    assert!(q.record(&s, &a, Kind::Produce, 50_000, now) > Duration::ZERO);
    assert_eq!(q.record(&s, &b, Kind::Produce, 5_000, now), Duration::ZERO);
    // Fetch is measured apart from produce.
    assert_eq!(q.record(&s, &a, Kind::Fetch, 50_000, now), Duration::ZERO);
}

#[test]
fn client_ids_past_the_cap_share_other_in_buckets_and_labels() {
    let quotas = Quotas::default();
    let q = quotas.cluster("orders");
    let s = spec(ByteRates::default(), produce(1_000), 2);
    let now = Instant::now();
    for id in ["a", "b", "c", "d"] {
        let c = q.client(Some(id), s.max_client_ids);
        q.record(&s, &c, Kind::Produce, 6_000, now);
    }
    // c and d together: 12 kB over 10 s in one bucket.
    let late = q.client(Some("e"), s.max_client_ids);
    assert!(Arc::ptr_eq(&late, &q.other));
    assert_eq!(q.record(&s, &late, Kind::Produce, 0, now), ms(2_000));
    // A known id keeps its own bucket.
    assert!(!Arc::ptr_eq(&q.client(Some("a"), 2), &q.other));
    let mut r = Registry::default();
    quotas.register(&mut r);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
    let series = |id: &str| {
        format!("quota_bytes_total{{cluster=\"orders\",client_id=\"{id}\",kind=\"produce\"}}")
    };
    assert!(text.contains(&format!("{} 6000", series("a"))), "{text}");
    assert!(
        text.contains(&format!("{} 12000", series("other"))),
        "{text}"
    );
    assert!(!text.contains("client_id=\"c\""), "{text}");
}

#[test]
fn usage_survives_a_second_generation_of_the_cluster() {
    let quotas = Quotas::default();
    let s = spec(produce(1_000), ByteRates::default(), 10);
    let now = Instant::now();
    let first = quotas.cluster("orders");
    let c = first.client(Some("app"), 10);
    first.record(&s, &c, Kind::Produce, 11_000, now);
    let second = quotas.cluster("orders");
    let c = second.client(Some("app"), 10);
    assert_eq!(second.record(&s, &c, Kind::Produce, 0, now), ms(1_000));
}

#[test]
fn connections_over_the_rate_are_refused_and_not_counted() {
    let quotas = Quotas::default();
    let q = quotas.cluster("orders");
    let mut s = spec(ByteRates::default(), ByteRates::default(), 10);
    s.connections_per_second = NonZeroU32::new(2);
    let now = Instant::now();
    // Two per second over Kafka's ten windows: twenty at once.
    let admitted = (0..30).filter(|_| q.admit_connection(&s, now)).count();
    assert_eq!(admitted, 20);
    // Refusals are not counted: once the rate falls, connections come in.
    assert!(q.admit_connection(&s, now + ms(10_800)));
}

#[test]
fn the_usage_gauge_is_the_highest_ratio_and_falls_when_traffic_stops() {
    let quotas = Quotas::default();
    let q = quotas.cluster("orders");
    let s = spec(produce(2_000), produce(1_000), 10);
    let now = Instant::now();
    assert_eq!(q.usage(Kind::Produce, now), None);
    q.configure(Some(s));
    let c = q.client(Some("app"), 10);
    q.record(&s, &c, Kind::Produce, 5_000, now);
    // The client's 0.5 kB/s over its 1 kB/s beats the cluster's 0.25.
    assert_eq!(q.usage(Kind::Produce, now), Some(0.5));
    assert_eq!(q.usage(Kind::Fetch, now), None);
    assert_eq!(q.usage(Kind::Produce, now + ms(20_000)), Some(0.0));
}
