//! Reloads that must not apply: invalid, failing to prepare, concurrent, or
//! against a stale version — and the deadline that ends a drain.

use std::net::TcpListener;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, FetchRequest, TopicName, fetch_request};
use kafka_protocol::protocol::StrBytes;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::{listed_times, tansu_cluster as cluster, with_drain as config};
use sluice_tests::kafka::Conn;
use sluice_tests::peers::Tansu;

#[test]
fn a_port_taken_by_another_process_fails_prepare_and_changes_nothing() {
    let tansu = Tansu::start();
    let (a, b, c) = (ports(2), ports(2), ports(2));
    let original = config("5s", &[cluster("a", &tansu.addr, a, "")]);
    let mut proxy = Proxy::start(&original);
    proxy.allow("reload failed while preparing");
    proxy.allow("cluster generation failed");
    let before = proxy.get("/admin/config/status").json();
    let clusters_before = proxy.get("/admin/clusters").json();

    // Another process holds c's bootstrap port; b's ports are free.
    let squatter = TcpListener::bind(("127.0.0.1", c)).unwrap();
    let failing = config(
        "5s",
        &[
            cluster("a", &tansu.addr, a, "    limits: { maxConnections: 7 }\n"),
            cluster("b", &tansu.addr, b, ""),
            cluster("c", &tansu.addr, c, ""),
        ],
    );
    let r = proxy.reload(&failing);
    assert_eq!(r.status, 500, "{}", r.body);
    let body = r.json();
    assert_eq!(body["success"], false);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains(&format!("virtual cluster c: bind 127.0.0.1:{c}")),
        "{body}"
    );
    assert_eq!(body["configVersion"], before["currentConfigVersion"]);

    // Nothing changed: version, clusters, generations; b's ports were released.
    let status = proxy.get("/admin/config/status").json();
    assert_eq!(
        status["currentConfigVersion"],
        before["currentConfigVersion"]
    );
    assert_eq!(status["lastReloadAttempt"]["status"], "failed");
    assert!(
        status["lastReloadAttempt"]["error"]
            .as_str()
            .unwrap()
            .contains("bind")
    );
    let clusters_after = proxy.get("/admin/clusters").json();
    assert_eq!(
        clusters_after["clusters"][0]["generation"],
        clusters_before["clusters"][0]["generation"]
    );
    assert_eq!(clusters_after["clusters"].as_array().unwrap().len(), 1);
    assert!(
        TcpListener::bind(("127.0.0.1", b)).is_ok(),
        "a prepared port was left bound"
    );
    assert_eq!(proxy.get("/admin/config").body, proxy.render(&original));
    assert_eq!(
        proxy.metric("sluice_config_reload_total{result=\"failed\"}"),
        1.0
    );

    // A watcher retrying this configuration fails the same way again and
    // again: each failure is counted, but the generations it never kept
    // leave no series behind (the soak once found one per attempt).
    for _ in 0..4 {
        let r = proxy.reload(&failing);
        assert_eq!(r.status, 500, "{}", r.body);
    }
    assert_eq!(
        proxy.metric("sluice_config_reload_total{result=\"failed\"}"),
        5.0
    );
    assert_eq!(
        proxy.metric(
            "sluice_virtual_cluster_transitions_total{cluster=\"c\",from=\"initializing\",to=\"failed\"}"
        ),
        5.0
    );
    let metrics = proxy.get("/metrics").body;
    let series =
        |prefix: &str| -> Vec<&str> { metrics.lines().filter(|l| l.starts_with(prefix)).collect() };
    assert_eq!(
        series("sluice_generation_connections_active{"),
        [format!(
            "sluice_generation_connections_active{{cluster=\"a\",generation=\"{}\"}} 0",
            clusters_before["clusters"][0]["generation"]
        )],
        "{metrics}"
    );
    assert_eq!(
        series("sluice_virtual_cluster_state{"),
        ["sluice_virtual_cluster_state{cluster=\"a\",state=\"accepting\"} 1"],
        "{metrics}"
    );
    drop(squatter);
    proxy.assert_clean_logs();
}

#[test]
fn an_invalid_configuration_is_rejected_with_every_error_and_changes_nothing() {
    let tansu = Tansu::start();
    let a = ports(2);
    let original = config("5s", &[cluster("a", &tansu.addr, a, "")]);
    let mut proxy = Proxy::start(&original);
    proxy.allow("reload rejected");
    let bad = "admin: { listen: \"{admin}\" }\ndrainTimeout: soon\nvirtualClusters:\n  - name: Bad_Name\n    upstream: { bootstrapServers: [] }\n";
    let r = proxy.reload(bad);
    assert_eq!(r.status, 400, "{}", r.body);
    let body = r.json();
    let errors: Vec<String> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}:{}: {}: {}",
                e["line"],
                e["column"],
                e["path"].as_str().unwrap(),
                e["message"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        errors,
        [
            "2:15: drainTimeout: \"soon\" is not a duration: write a whole number and a unit, ms, s, m or h (e.g. 30s)",
            "4:5: virtualClusters[0].gateway: required field is missing",
            "4:11: virtualClusters[0].name: \"Bad_Name\" is not a valid name: use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit",
            "5:35: virtualClusters[0].upstream.bootstrapServers: must list at least one server",
        ]
    );
    assert_eq!(proxy.get("/admin/config").body, proxy.render(&original));
    assert_eq!(
        proxy.get("/admin/config/status").json()["lastReloadAttempt"]["status"],
        "rejected"
    );
    proxy.assert_clean_logs();
}

#[test]
fn concurrent_reloads_one_proceeds_and_the_other_gets_409() {
    let tansu = Tansu::start();
    // Big configurations make each reload take long enough to overlap.
    let base = ports(2);
    let big = |variant: u32| {
        // c0 changes each time; the other 599 make validating take a while.
        // They listen on 127.0.0.2, apart from every other test's ports.
        let mut out = vec![cluster(
            "c0",
            &tansu.addr,
            base,
            &format!("    limits: {{ maxConnections: {} }}\n", 100 + variant),
        )];
        for i in 1..600u32 {
            out.push(format!(
                "  - name: c{i}\n    upstream: {{ bootstrapServers: [\"{}\"] }}\n    gateway: {{ listenHost: 127.0.0.2, advertisedHost: 127.0.0.1, bootstrapPort: {}, brokerPorts: {{ start: {}, count: 1 }} }}\n",
                tansu.addr,
                40000 + 2 * i,
                40001 + 2 * i
            ));
        }
        config("5s", &out)
    };
    let mut proxy = Proxy::start(&big(0));
    proxy.allow("another reload is running");
    for attempt in 1..=10u32 {
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let bodies = [
            proxy.render(&big(2 * attempt)),
            proxy.render(&big(2 * attempt + 1)),
        ];
        let admin = proxy.admin.clone();
        let handles: Vec<_> = bodies
            .into_iter()
            .map(|body| {
                let (barrier, admin) = (std::sync::Arc::clone(&barrier), admin.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    sluice_testkit::http::request(
                        &admin,
                        "POST",
                        "/admin/config/reload",
                        &[],
                        body.as_bytes(),
                    )
                    .unwrap()
                })
            })
            .collect();
        let mut statuses: Vec<(u16, serde_json::Value)> = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .map(|r| (r.status, r.json()))
            .collect();
        statuses.sort_by_key(|(s, _)| *s);
        if statuses[1].0 == 409 {
            assert_eq!(statuses[0].0, 200, "{statuses:?}");
            assert_eq!(statuses[1].1["error"], "another reload is in progress");
            assert!(statuses[1].1["inProgressSince"].as_str().is_some());
            assert_eq!(
                proxy.metric("sluice_config_reload_total{result=\"conflict\"}"),
                1.0
            );
            proxy.assert_clean_logs();
            return;
        }
        assert_eq!((statuses[0].0, statuses[1].0), (200, 200), "{statuses:?}");
    }
    panic!("two simultaneous reloads never overlapped in 10 attempts");
}

#[test]
fn if_match_applies_only_on_top_of_the_named_version() {
    let tansu = Tansu::start();
    let a = ports(2);
    let mut proxy = Proxy::start(&config("5s", &[cluster("a", &tansu.addr, a, "")]));
    proxy.allow("If-Match names another version");
    let current = proxy.get("/admin/config/status").json()["currentConfigVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let next = proxy.render(&config("6s", &[cluster("a", &tansu.addr, a, "")]));
    let stale = proxy.post(
        "/admin/config/reload",
        next.as_bytes(),
        &[("If-Match", "sha256:0000")],
    );
    assert_eq!(stale.status, 412, "{}", stale.body);
    assert_eq!(stale.json()["configVersion"], current.as_str());
    let quoted = format!("\"{current}\"");
    let ok = proxy.post(
        "/admin/config/reload",
        next.as_bytes(),
        &[("If-Match", &quoted)],
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.json()["changed"], true);
    let again = proxy.post("/admin/config/reload", next.as_bytes(), &[]);
    assert_eq!(
        again.json()["changed"],
        false,
        "same bytes again must be a no-op"
    );
    assert_eq!(
        proxy.get("/admin/config/status").json()["lastReloadAttempt"]["status"],
        "unchanged"
    );
    proxy.assert_clean_logs();
}

#[test]
fn a_request_still_in_flight_at_the_drain_deadline_is_force_closed_and_counted() {
    let tansu = Tansu::start();
    tansu.create_topic("quiet", 1);
    let a = ports(2);
    let mut proxy = Proxy::start(&config("1s", &[cluster("a", &tansu.addr, a, "")]));
    proxy.allow("drain deadline reached");

    // A long poll on an empty topic: the broker holds the Fetch for 20 s.
    let mut conn = Conn::connect(&format!("127.0.0.1:{a}"));
    let mut fetch = FetchRequest::default();
    fetch.replica_id = kafka_protocol::messages::BrokerId(-1);
    fetch.max_wait_ms = 20_000;
    fetch.min_bytes = 1_000_000;
    fetch.max_bytes = 1_000_000;
    let mut partition = fetch_request::FetchPartition::default();
    partition.partition = 0;
    partition.fetch_offset = 0;
    partition.partition_max_bytes = 1_000_000;
    let mut topic = fetch_request::FetchTopic::default();
    topic.topic = TopicName(StrBytes::from_static_str("quiet"));
    topic.partitions = vec![partition];
    fetch.topics = vec![topic];
    conn.send(ApiKey::Fetch, 4, &fetch);

    let r = proxy.reload(&config(
        "1s",
        &[listed_times(
            &cluster("a", &tansu.addr, a, ""),
            &tansu.addr,
            2,
        )],
    ));
    assert_eq!(r.status, 200, "{}", r.body);
    let started = std::time::Instant::now();
    assert!(
        conn.closed_within(Duration::from_secs(10)),
        "the draining connection was never closed"
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(700),
        "closed after {took:?}, before the drain deadline"
    );
    proxy.wait_for_log("drain deadline reached", Duration::from_secs(5));
    assert_eq!(
        proxy.metric("sluice_drained_connections_total{cluster=\"a\",result=\"forced\"}"),
        1.0
    );
    proxy.assert_clean_logs();
}
