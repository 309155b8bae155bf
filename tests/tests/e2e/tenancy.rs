//! Tenants with names of their own on one shared tansu: two virtual
//! clusters, each `tenancy` with its default prefix, each with a topic
//! `orders` and a consumer group `app` of its own.

use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::{tansu_cluster, with_drain};
use sluice_tests::peers::Tansu;
use sluice_tests::python;

const TENANT: &str = "    tenancy: {}\n";

/// A proxy with tenants `team-a` and `team-b` on `tansu`, and their
/// bootstrap addresses.
fn two_tenants(tansu: &Tansu) -> (Proxy, String, String) {
    let p = ports(4);
    let clusters = [
        tansu_cluster("team-a", &tansu.addr, p, TENANT),
        tansu_cluster("team-b", &tansu.addr, p + 2, TENANT),
    ];
    let proxy = Proxy::start(&with_drain("5s", &clusters));
    (
        proxy,
        format!("127.0.0.1:{p}"),
        format!("127.0.0.1:{}", p + 2),
    )
}

fn round_trip(bootstrap: &str, count: u32) -> serde_json::Value {
    let count = count.to_string();
    let args = [bootstrap, "orders", &count, "app"];
    python::run_json("roundtrip.py", &args, Duration::from_secs(120))
}

fn admin(bootstrap: &str, op: &[&str]) -> serde_json::Value {
    let args = [&[bootstrap][..], op].concat();
    python::run_json("admin.py", &args, Duration::from_secs(60))
}

/// librdkafka produces, consumes with its group and commits through each
/// tenant: each reads back only its own messages, lists only its own topic
/// and group, unprefixed; upstream, the names carry each tenant's prefix.
#[test]
fn two_tenants_each_see_only_their_own_orders_and_app_group() {
    let tansu = Tansu::start();
    tansu.create_topic("team-a.orders", 1);
    tansu.create_topic("team-b.orders", 1);
    tansu.create_topic("shared-unprefixed", 1);
    let (proxy, a, b) = two_tenants(&tansu);

    let first = round_trip(&a, 30);
    let second = round_trip(&b, 20);
    for (report, count) in [(&first, 30), (&second, 20)] {
        assert_eq!(report["errors"], serde_json::json!([]), "{report}");
        assert_eq!(report["acked"], count, "{report}");
        // Only its own messages: the other tenant's `orders` is another topic.
        assert_eq!(report["unique"], count, "{report}");
        assert_eq!(report["consumed"], count, "{report}");
        assert_eq!(report["topics"], serde_json::json!(["orders"]), "{report}");
    }
    for tenant in [&a, &b] {
        let groups = admin(tenant, &["list-groups"]);
        assert_eq!(groups["groups"], serde_json::json!(["app"]), "{groups}");
    }
    // Upstream, as the platform sees the shared cluster.
    let direct = admin(&tansu.addr, &["list-groups"]);
    assert_eq!(
        direct["groups"],
        serde_json::json!(["team-a.app", "team-b.app"]),
        "{direct}"
    );
    let topics = admin(&tansu.addr, &["list-topics"]);
    let names: Vec<&str> = topics["topics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert!(
        names.contains(&"team-a.orders") && names.contains(&"team-b.orders"),
        "{topics}"
    );
    assert!(!names.contains(&"orders"), "{topics}");
    proxy.assert_clean_logs();
}

/// An admin client creates, lists and deletes only its tenant's topics; a
/// name that looks like another tenant's stays inside its own namespace;
/// the cluster's administration is refused.
#[test]
fn an_admin_client_works_inside_its_namespace_and_an_escape_stays_inside() {
    let tansu = Tansu::start();
    tansu.create_topic("team-b.orders", 1);
    let (proxy, a, _) = two_tenants(&tansu);

    let created = admin(&a, &["create-topic", "payments", "2"]);
    assert_eq!(created["payments"]["ok"], true, "{created}");
    // team-a naming team-b's topic gets a topic of its own.
    let escape = admin(&a, &["create-topic", "team-b.orders", "1"]);
    assert_eq!(escape["team-b.orders"]["ok"], true, "{escape}");
    let listed = admin(&a, &["list-topics"]);
    assert_eq!(
        listed["topics"],
        serde_json::json!(["payments", "team-b.orders"]),
        "{listed}"
    );
    let deleted = admin(&a, &["delete-topic", "team-b.orders"]);
    assert_eq!(deleted["team-b.orders"]["ok"], true, "{deleted}");

    let topics = admin(&tansu.addr, &["list-topics"]);
    let names: Vec<&str> = topics["topics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert!(names.contains(&"team-a.payments"), "{topics}");
    // team-b's own topic is untouched; team-a's look-alike is gone.
    assert!(names.contains(&"team-b.orders"), "{topics}");
    assert!(!names.contains(&"team-a.team-b.orders"), "{topics}");
    assert!(!names.contains(&"payments"), "{topics}");
    proxy.assert_clean_logs();
}
