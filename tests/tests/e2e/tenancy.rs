//! Tenants with names of their own on one shared tansu: two virtual
//! clusters, each `tenancy` with its default prefix, each with a topic
//! `orders` and a consumer group `app` of its own.

use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::{tansu_cluster, with_drain};
use sluice_tests::peers::Tansu;
use sluice_tests::python::{self, Steady};

mod ids;
mod memory;

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

/// A tansu with `orders` for tenants `team-a` and `team-b`, and the proxy
/// of [`two_tenants`].
fn orders_in_two_tenants() -> (Tansu, Proxy, String, String) {
    let tansu = Tansu::start();
    tansu.create_topic("team-a.orders", 1);
    tansu.create_topic("team-b.orders", 1);
    let (proxy, a, b) = two_tenants(&tansu);
    (tansu, proxy, a, b)
}

/// Upstream, as the platform sees the shared cluster: each tenant's `app`
/// group under its own prefix.
fn assert_upstream_groups(tansu: &Tansu) {
    let direct = admin(&tansu.addr, &["list-groups"]);
    let groups = serde_json::json!(["team-a.app", "team-b.app"]);
    assert_eq!(direct["groups"], groups, "{direct}");
}

fn round_trip(bootstrap: &str, count: u32) -> serde_json::Value {
    round_trip_topic(bootstrap, "orders", count)
}

fn round_trip_topic(bootstrap: &str, topic: &str, count: u32) -> serde_json::Value {
    let count = count.to_string();
    let args = [bootstrap, topic, &count, "app"];
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
    assert_upstream_groups(&tansu);
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

fn tenant_client(args: &[&str]) -> serde_json::Value {
    python::run_json("tenant_client.py", args, Duration::from_secs(120))
}

/// kafka-python, a second library with protocol versions of its own,
/// produces, consumes with the group `app` and commits through each tenant.
#[test]
fn kafka_python_round_trips_through_each_tenant_with_its_own_group() {
    let (tansu, proxy, a, b) = orders_in_two_tenants();
    for (bootstrap, count) in [(&a, "15"), (&b, "25")] {
        let args = [
            bootstrap.as_str(),
            "orders",
            "app",
            "roundtrip",
            count,
            "--library",
            "kafka-python",
        ];
        let report = tenant_client(&args);
        assert_eq!(report["errors"], serde_json::json!([]), "{report}");
        assert_eq!(report["acked"].to_string(), count, "{report}");
        assert_eq!(report["unique"].to_string(), count, "{report}");
        assert_eq!(report["topics"], serde_json::json!(["orders"]), "{report}");
    }
    assert_upstream_groups(&tansu);
    proxy.assert_clean_logs();
}

/// librdkafka's transactional producers in both tenants at once, with the
/// same transactional id: each commits one transaction and aborts another,
/// without an error, and a consumer of each reads its own records only.
/// Unprefixed, the two would share one transactional id and fence each
/// other. (tansu gives read_committed consumers aborted records too, as it
/// does without the proxy, so the aborted five are read as well.)
#[test]
fn transactions_commit_and_abort_through_each_tenant_with_the_same_id() {
    let (_tansu, proxy, a, b) = orders_in_two_tenants();
    let run = |bootstrap: String| {
        std::thread::spawn(move || {
            tenant_client(&[&bootstrap, "orders", "app", "transactions", "tx"])
        })
    };
    let (ta, tb) = (run(a), run(b));
    for report in [ta.join().unwrap(), tb.join().unwrap()] {
        assert_eq!(report["errors"], serde_json::json!([]), "{report}");
        let keys: Vec<String> = (0..5)
            .flat_map(|i| [format!("abort-{i}"), format!("commit-{i}")])
            .collect();
        let mut keys = keys;
        keys.sort();
        assert_eq!(report["keys"], serde_json::json!(keys), "{report}");
    }
    proxy.assert_clean_logs();
}

/// A third tenant added on the shared upstream while steady producers and
/// consumer groups run in the first two: they notice nothing (no error, no
/// reconnect, no new connection, the same generation), and the new tenant
/// works at once, in its own namespace.
#[test]
fn adding_a_third_tenant_leaves_the_first_two_undisturbed() {
    let tansu = Tansu::start();
    for topic in ["team-a.orders", "team-b.orders", "team-c.orders"] {
        tansu.create_topic(topic, 2);
    }
    let p = ports(6);
    let cluster = |name: &str, port: u16| tansu_cluster(name, &tansu.addr, port, TENANT);
    let two = [cluster("team-a", p), cluster("team-b", p + 2)];
    let proxy = Proxy::start(&with_drain("3s", &two));
    let steady = |port: u16| Steady::start(&format!("127.0.0.1:{port}"), "orders", "app", true);
    let clients = [steady(p), steady(p + 2)];
    let names = ["team-a", "team-b"];
    let before = names.map(|n| (proxy.connections_accepted(n), proxy.generation(n)));

    let three = [two[0].clone(), two[1].clone(), cluster("team-c", p + 4)];
    let added = proxy.reload(&with_drain("3s", &three));
    assert_eq!(added.status, 200, "{}", added.body);
    assert_eq!(
        added.json()["clustersAdded"],
        serde_json::json!(["team-c"]),
        "{}",
        added.body
    );
    let report = round_trip(&format!("127.0.0.1:{}", p + 4), 10);
    assert_eq!(report["unique"], 10, "{report}");
    assert_eq!(report["topics"], serde_json::json!(["orders"]), "{report}");

    for (client, name) in clients.into_iter().zip(names) {
        let report = client.finish();
        assert_eq!(report["error_count"], 0, "{name}: {report}");
        assert_eq!(report["disconnects"], 0, "{name}: {report}");
        assert_eq!(report["lost"], 0, "{name}: {report}");
    }
    let after = names.map(|n| (proxy.connections_accepted(n), proxy.generation(n)));
    assert_eq!(after, before, "the first two tenants noticed the third");
    proxy.assert_clean_logs();
}

/// A tenant's topic policy names topics as its clients do, without the
/// prefix: `payments` may be written, `orders` may not.
#[test]
fn a_tenants_topic_policy_judges_the_names_its_clients_give() {
    let tansu = Tansu::start();
    tansu.create_topic("team-a.orders", 1);
    tansu.create_topic("team-a.payments", 1);
    let policy = "    filters:
      - type: topic-policy
        config:
          default: allow
          rules:
            - { deny: [produce], topics: [orders] }
";
    let p = ports(2);
    let cluster = tansu_cluster("team-a", &tansu.addr, p, &format!("{TENANT}{policy}"));
    let proxy = Proxy::start(&with_drain("3s", &[cluster]));
    let bootstrap = format!("127.0.0.1:{p}");
    let allowed = round_trip_topic(&bootstrap, "payments", 10);
    assert_eq!(allowed["errors"], serde_json::json!([]), "{allowed}");
    assert_eq!(allowed["unique"], 10, "{allowed}");
    let denied = round_trip_topic(&bootstrap, "orders", 3);
    assert_eq!(denied["acked"], 0, "{denied}");
    let errors = denied["errors"].to_string();
    assert!(
        errors.contains("TOPIC_AUTHORIZATION_FAILED") || errors.contains("authorization"),
        "{denied}"
    );
    let denied_count = proxy.metric_sum("sluice_policy_denied_total", "");
    assert!(denied_count >= 1.0, "{denied_count}");
}
