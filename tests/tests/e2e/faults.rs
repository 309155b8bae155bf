//! Faults with real processes: a broker's endpoint killed with SIGKILL and
//! restarted mid-stream, a broker that goes down and comes back mid-stream, request errors injected into the brokers and partition
//! leaders moved, a proxy killed while the watcher retries, a watcher killed
//! and restarted, a watched directory removed and recreated.

use std::time::Duration;

use sluice_testkit::config::{version, watched as reloadable};
use sluice_testkit::ports::{port, ports};
use sluice_testkit::process::Proc;
use sluice_testkit::proxy::Proxy;
use sluice_testkit::rig::{AT_ONCE, Rig};
use sluice_testkit::watcher::Watcher;
use sluice_tests::peers::{MockCluster, TANSU_NODE_ID, Tansu};
use sluice_tests::python::Steady;

const SECONDS_30: Duration = Duration::from_secs(30);

/// A proxy with one cluster `m` in front of the 3-broker mock.
fn proxy_for(mock: &MockCluster, base: u16) -> Proxy {
    Proxy::start(&format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: m\n    upstream: {{ bootstrapServers: [\"{}\"] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {base}, brokerPorts: {{ start: {}, count: 3, firstNodeId: 1 }} }}\n",
        mock.brokers[0],
        base + 1
    ))
}

#[test]
fn a_broker_down_and_back_mid_stream_loses_nothing_and_the_proxy_stays_up() {
    let mut mock = MockCluster::start(3, &["flow:3"]);
    let base = ports(4);
    let mut proxy = proxy_for(&mock, base);
    // A broker going away is reported by the proxy as it should be.
    proxy.allow("connection closed");
    proxy.allow("bootstrap server unreachable");
    let clients = Steady::start(&format!("127.0.0.1:{base}"), "flow", "flow-group", true);
    mock.set_broker(2, false);
    // Keep producing while it is down, then bring it back.
    std::thread::sleep(Duration::from_secs(2));
    mock.set_broker(2, true);
    std::thread::sleep(Duration::from_secs(2));
    let report = clients.finish();
    assert_eq!(report["lost"], 0, "{report}");
    assert!(report["acked"].as_u64().unwrap() > 100, "{report}");
    assert_eq!(proxy.get("/admin/health").status, 200);
    assert_eq!(proxy.get("/admin/ready").status, 200);
    proxy.assert_clean_logs();
}

/// A socat relaying `front` to `broker`, the endpoint the broker advertises.
fn endpoint(front: u16, broker: &str) -> Proc {
    let mut cmd = std::process::Command::new("socat");
    cmd.args(["-d", "-d"])
        .arg(format!("TCP-LISTEN:{front},bind=127.0.0.1,reuseaddr,fork"))
        .arg(format!("TCP:{broker}"));
    let mut relay = Proc::spawn("socat", cmd);
    relay.wait_for_line("listening on", Duration::from_secs(10));
    relay
}

/// The processes whose parent is `pid` (socat's per-connection relays).
fn children(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                // pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

/// The broker's whole network presence dies with SIGKILL and comes back on
/// the same address while clients produce and consume through the proxy.
/// (The broker process itself keeps its log: both brokers available here,
/// tansu with memory storage and librdkafka's mock, would come back empty,
/// so the process killed is the one owning the broker's advertised TCP
/// endpoint, a socat relay. The mock's own broker-down control is the test
/// below.)
#[test]
fn a_broker_endpoint_killed_and_restarted_mid_stream_loses_nothing() {
    let front = port();
    let tansu = Tansu::start_advertising(Some(&format!("127.0.0.1:{front}")));
    tansu.create_topic("survive", 1);
    let mut relay = endpoint(front, &tansu.addr);
    let base = ports(2);
    let mut proxy = Proxy::start(&format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: t\n    upstream: {{ bootstrapServers: [\"127.0.0.1:{front}\"] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {base}, brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }} }}\n",
        base + 1
    ));
    proxy.allow("connection closed");
    proxy.allow("upstream");
    let clients = Steady::start(
        &format!("127.0.0.1:{base}"),
        "survive",
        "survive-group",
        true,
    );

    // socat forks a relay per connection: kill the listener, then its relays.
    let relays = children(relay.pid());
    relay.signal("KILL");
    relay.wait_exit(SECONDS_30).expect("socat ended");
    assert!(!relays.is_empty(), "no connection went through the relay");
    for pid in relays {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    // The clients reconnect through the proxy, which cannot reach the broker.
    let failures = "sluice_upstream_connect_failures_total{cluster=\"t\"}";
    proxy.wait_for_metric(failures, 1.0, SECONDS_30);
    let _relay = endpoint(front, &tansu.addr);
    let produce = "sluice_requests_total{cluster=\"t\",api=\"Produce\"}";
    let produced = proxy.metric(produce);
    proxy.wait_for_metric(produce, produced + 50.0, SECONDS_30);
    let report = clients.finish();
    assert_eq!(report["lost"], 0, "{report}");
    assert!(report["acked"].as_u64().unwrap() > 100, "{report}");
    assert_eq!(proxy.get("/admin/health").status, 200);
    assert_eq!(proxy.get("/admin/ready").status, 200);
}

/// librdkafka's request-error injection: the errors a leader change causes,
/// then real leader moves. The proxy forwards the errors untouched, learns
/// the new leaders from the metadata the clients fetch again, and every
/// acknowledged message the broker kept reaches the consumer group.
///
/// The mock itself does not keep every acknowledged message across these
/// leader moves: with the clients connected to it directly, no proxy, an
/// acknowledged message was missing from the log (read afresh, every
/// partition from the start) in 2 of 26 runs on a loaded machine. So a
/// message the group never got counts against the proxy only when the
/// broker still has it (`skipped_by_group`, read from the broker directly,
/// not through the proxy). Before, the test asserted `lost == 0` and failed
/// so, once in CI (FLAKY) and 1 run in 8 here under load.
#[test]
fn injected_request_errors_and_leader_moves_are_survived_through_the_proxy() {
    const PRODUCE: i16 = 0;
    const FETCH: i16 = 1;
    const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    const NOT_COORDINATOR: i16 = 16;
    const OFFSET_COMMIT: i16 = 8;
    let mut mock = MockCluster::start(3, &["moves:3"]);
    let base = ports(4);
    let mut proxy = proxy_for(&mock, base);
    proxy.allow("connection closed");
    let clients = Steady::start_verified(
        &format!("127.0.0.1:{base}"),
        "moves",
        "moves-group",
        &mock.brokers[0],
    );
    let metadata = "sluice_rewrites_total{cluster=\"m\",api=\"Metadata\"}";
    let produce = "sluice_requests_total{cluster=\"m\",api=\"Produce\"}";
    let before = proxy.metric(metadata);

    mock.push_errors(PRODUCE, NOT_LEADER_OR_FOLLOWER, 5);
    mock.push_errors(FETCH, NOT_LEADER_OR_FOLLOWER, 5);
    mock.push_errors(OFFSET_COMMIT, NOT_COORDINATOR, 2);
    for partition in 0..3 {
        mock.set_leader("moves", partition, (partition as u32 + 1) % 3 + 1);
    }
    // The errors send the clients back to metadata, through the proxy...
    proxy.wait_for_metric(metadata, before + 1.0, SECONDS_30);
    // ...and then they produce to the new leaders.
    let produced = proxy.metric(produce);
    proxy.wait_for_metric(produce, produced + 50.0, SECONDS_30);
    let report = clients.finish();
    assert_eq!(report["skipped_by_group"], 0, "{report}");
    assert_eq!(report["lost"], report["missing_from_log"], "{report}");
    assert!(report["acked"].as_u64().unwrap() > 100, "{report}");
    assert_eq!(proxy.get("/admin/health").status, 200);
    let closed =
        proxy.metric("sluice_connections_closed_on_error_total{cluster=\"m\",reason=\"rewrite\"}");
    assert_eq!(closed, 0.0, "every response was rewritten");
    proxy.assert_clean_logs();
}

#[test]
fn a_proxy_killed_while_the_watcher_retries_gets_the_pending_version_when_back() {
    crate::watcher::swap_while_the_proxy_is_down("KILL");
}

#[test]
fn a_restarted_watcher_reconciles_at_startup() {
    let mut rig = Rig::start(&AT_ONCE);
    rig.kill_watcher();
    // Changed while no watcher ran.
    let next = rig.config(4);
    rig.volume.swap(next.as_bytes());
    rig.restart_watcher(&["--stagger", "5s", "--jitter", "0s", "--slot", "3"]);
    // Startup reconciles at once, without the 15 s stagger.
    rig.proxy
        .wait_for_version(&version(&next), Duration::from_secs(10));
    rig.proxy.assert_clean_logs();
}

#[test]
fn a_watched_directory_removed_and_recreated_is_picked_up_again() {
    let p = ports(2);
    let proxy = Proxy::start(&reloadable("{admin}", p, 0));
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("conf");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("proxy.yaml");
    std::fs::write(&file, proxy.render(&reloadable("{admin}", p, 0))).unwrap();
    let _watcher = Watcher::start(
        &file,
        &proxy.admin,
        &["--stagger", "0s", "--jitter", "0s", "--resync", "1s"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    let next = proxy.render(&reloadable("{admin}", p, 8));
    std::fs::write(&file, &next).unwrap();
    proxy.wait_for_version(&version(&next), SECONDS_30);
    // And later edits are seen too.
    let later = proxy.render(&reloadable("{admin}", p, 9));
    std::fs::write(&file, &later).unwrap();
    proxy.wait_for_version(&version(&later), SECONDS_30);
    proxy.assert_clean_logs();
}

#[test]
fn an_inotify_queue_overflow_still_ends_on_the_newest_content() {
    let p = ports(2);
    let proxy = Proxy::start(&reloadable("{admin}", p, 0));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxy.yaml");
    std::fs::write(&file, proxy.render(&reloadable("{admin}", p, 0))).unwrap();
    let _watcher = Watcher::start(&file, &proxy.admin, &AT_ONCE);
    // More events than inotify queues by default (16,384), then the change.
    let noise = dir.path().join("noise");
    std::fs::create_dir(&noise).unwrap();
    for i in 0..20_000 {
        std::fs::write(dir.path().join(format!("n{i}")), b"").unwrap();
    }
    let next = proxy.render(&reloadable("{admin}", p, 5));
    std::fs::write(&file, &next).unwrap();
    proxy.wait_for_version(&version(&next), SECONDS_30);
    proxy.assert_clean_logs();
}
