use std::num::{NonZeroU32, NonZeroU64};

use super::*;

fn spec(cluster: ByteRates, per_client_id: ByteRates, max_client_ids: u32) -> QuotaSpec {
    QuotaSpec {
        cluster,
        per_client_id,
        per_principal: ByteRates::default(),
        connections_per_second: None,
        max_client_ids,
        max_principals: 10,
    }
}

fn produce(bytes: u64) -> ByteRates {
    ByteRates {
        produce: NonZeroU64::new(bytes),
        fetch: None,
    }
}

fn fetch(bytes: u64) -> ByteRates {
    ByteRates {
        produce: None,
        fetch: NonZeroU64::new(bytes),
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A Produce of `bytes` from `c` at `now`: when it starts (ms after
/// `now`) and its throttle time (ms).
fn produce_at(q: &ClusterQuota, s: &QuotaSpec, c: &Client, bytes: u64, now: Instant) -> (u64, u64) {
    let turn = q.reserve(s, (c, None), bytes, now);
    let start = turn.start.duration_since(now).as_millis() as u64;
    (start, turn.throttle.as_millis() as u64)
}

#[test]
fn the_tighter_of_the_cluster_and_the_client_quota_wins() {
    // (cluster quota, per-client quota, expected (start, throttle) ms of
    // two Produces of 3 kB at once): the first passes (a second of
    // tolerance), the second waits for the bucket to owe a second again.
    let table = [
        (None, None, [(0, 0), (0, 0)]),
        (Some(1_000), None, [(0, 2_000), (2_000, 3_000)]),
        (None, Some(1_000), [(0, 2_000), (2_000, 3_000)]),
        (Some(1_000), Some(500), [(0, 5_000), (5_000, 6_000)]),
        (Some(500), Some(1_000), [(0, 5_000), (5_000, 6_000)]),
        (Some(3_000), Some(3_000), [(0, 0), (0, 1_000)]),
    ];
    for (i, (cluster, client, expected)) in table.into_iter().enumerate() {
        let quotas = Quotas::default();
        let q = quotas.cluster("orders");
        let s = spec(
            produce(cluster.unwrap_or(0)),
            produce(client.unwrap_or(0)),
            10,
        );
        let c = q.client(Some("app"), s.max_client_ids);
        let now = Instant::now();
        let got = [(); 2].map(|()| produce_at(&q, &s, &c, 3_000, now));
        assert_eq!(got, expected, "row {i}");
    }
}

#[test]
fn a_per_client_quota_leaves_other_client_ids_alone() {
    let quotas = Quotas::default();
    let q = quotas.cluster("orders");
    let s = spec(ByteRates::default(), produce(1_000), 10);
    let (a, b) = (q.client(Some("a"), 10), q.client(Some("b"), 10));
    let now = Instant::now();
    assert_eq!(produce_at(&q, &s, &a, 50_000, now), (0, 49_000));
    assert_eq!(produce_at(&q, &s, &b, 500, now), (0, 0));
    // Fetch is paced apart from produce (and has no quota here).
    assert_eq!(q.fetch_turn(&s, (&a, None), now), now);
}

#[test]
fn connections_of_one_client_id_queue_in_its_bucket() {
    // Every request of a client id, whatever connection it comes on,
    // takes its turn after the last one's: reconnecting buys nothing.
    let quotas = Quotas::default();
    let q = quotas.cluster("orders");
    let s = spec(produce(4_000), ByteRates::default(), 10);
    let now = Instant::now();
    let starts: Vec<u64> = (0..6)
        .map(|i| {
            let c = q.client(Some(&format!("conn-{i}")), 10);
            produce_at(&q, &s, &c, 2_000, now).0
        })
        .collect();
    assert_eq!(starts, [0, 0, 0, 500, 1_000, 1_500]);
    let text = metrics(&quotas);
    let held = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("quota_held_seconds_total{cluster=\"orders\",kind=\"produce\"} ")
        })
        .and_then(|v| v.parse::<f64>().ok());
    assert_eq!(held, Some(3.0), "{text}");
}

fn metrics(quotas: &Quotas) -> String {
    let mut r = Registry::default();
    quotas.register(&mut r);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
    text
}

#[test]
fn a_fetch_waits_while_its_bucket_owes_and_its_response_is_counted() {
    let quotas = Quotas::default();
    let q = quotas.cluster("orders");
    let s = spec(ByteRates::default(), fetch(1_000), 10);
    let c = q.client(Some("app"), 10);
    let now = Instant::now();
    assert_eq!(q.fetch_turn(&s, (&c, None), now), now);
    // A response of 3.5 kB: 2.5 s until the next Fetch conforms.
    assert_eq!(q.fetched(&s, (&c, None), 3_500, now), ms(2_500));
    assert_eq!(
        q.fetch_turn(&s, (&c, None), now + ms(1_000)),
        now + ms(2_500)
    );
    // Another client id is not held.
    let other = q.client(Some("other-app"), 10);
    assert_eq!(q.fetch_turn(&s, (&other, None), now), now);
}

#[test]
fn client_ids_past_the_cap_share_other_in_buckets_and_labels() {
    let quotas = Quotas::default();
    let q = quotas.cluster("orders");
    let s = spec(ByteRates::default(), produce(1_000), 2);
    let now = Instant::now();
    for id in ["a", "b", "c", "d"] {
        let c = q.client(Some(id), s.max_client_ids);
        q.reserve(&s, (&c, None), 6_000, now);
    }
    // c and d together: 12 kB in one bucket, so the next waits 11 s.
    let late = q.client(Some("e"), s.max_client_ids);
    assert!(Arc::ptr_eq(&late, &q.ids.other));
    assert_eq!(produce_at(&q, &s, &late, 0, now).0, 11_000);
    // A known id keeps its own bucket.
    assert!(!Arc::ptr_eq(&q.client(Some("a"), 2), &q.ids.other));
    let text = metrics(&quotas);
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
    first.reserve(&s, (&c, None), 11_000, now);
    let second = quotas.cluster("orders");
    let c = second.client(Some("app"), 10);
    assert_eq!(produce_at(&second, &s, &c, 0, now).0, 10_000);
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
    q.reserve(&s, (&c, None), 5_000, now);
    // The client's 0.5 kB/s over its 1 kB/s beats the cluster's 0.25.
    assert_eq!(q.usage(Kind::Produce, now), Some(0.5));
    assert_eq!(q.usage(Kind::Fetch, now), None);
    assert_eq!(q.usage(Kind::Produce, now + ms(20_000)), Some(0.0));
}

#[test]
fn a_principal_quota_holds_every_client_id_of_the_principal_and_no_other() {
    let quotas = Quotas::default();
    let q = quotas.cluster("orders");
    let s = QuotaSpec {
        per_principal: produce(1_000),
        max_principals: 2,
        ..spec(ByteRates::default(), ByteRates::default(), 10)
    };
    let none = spec(ByteRates::default(), ByteRates::default(), 10);
    assert!(
        q.principal(&none, Some("alice")).is_none(),
        "no perPrincipal"
    );
    let (alice, bob) = (q.principal(&s, Some("alice")), q.principal(&s, Some("bob")));
    let (alice, bob) = (alice.unwrap(), bob.unwrap());
    let (app, batch) = (q.client(Some("app"), 10), q.client(Some("batch"), 10));
    let now = Instant::now();
    // Alice's two client ids share her bucket: 3 kB puts it 2 s over.
    assert_eq!(
        q.reserve(&s, (&app, Some(&alice)), 3_000, now).throttle,
        ms(2_000)
    );
    let turn = q.reserve(&s, (&batch, Some(&alice)), 1_000, now);
    assert_eq!(
        turn.start,
        now + ms(2_000),
        "held: another id, same principal"
    );
    // Bob, with alice's client id, is not held by alice's bucket.
    let turn = q.reserve(&s, (&app, Some(&bob)), 1_000, now);
    assert_eq!((turn.start, turn.throttle), (now, Duration::ZERO));
    // Past maxPrincipals, later principals share `other`; connections
    // without one share "".
    let late = q.principal(&s, Some("carol")).unwrap();
    assert!(Arc::ptr_eq(&late, &q.principals.other));
    let text = metrics(&quotas);
    let alice =
        "quota_principal_bytes_total{cluster=\"orders\",principal=\"alice\",kind=\"produce\"} 4000";
    assert!(text.contains(alice), "{text}");
}
