//! The fleet rollout with real proxies, real watchers and a real broker.
//! Each "pod" is a network namespace of the test's own with the same
//! configuration bytes (`listenHost: 0.0.0.0`, the same ports), its own
//! ConfigMap-style volume, its own proxy and watcher; a hub namespace holds
//! the bridge, the broker and the test driver's requests (see
//! `sluice_testkit::netns`). Nothing touches the machine's own namespace.

use std::time::{Duration, Instant};

use sluice_admin_api::{ConfigStatus, FailureStage};
use sluice_testkit::bin;
use sluice_testkit::netns::{HUB, Net};
use sluice_testkit::process::Proc;
use sluice_testkit::volume::Volume;
use sluice_tests::python;

const ADMIN: u16 = 9190;
const WATCHER: u16 = 9192;
const BROKER: u16 = 9092;
const TOKEN: &str = "fleet-test-token";

/// Deployment-style pod names: the canary is the first in byte order.
const NAMES: [&str; 3] = [
    "sluice-proxy-7c9d8f6b5-b8kqz",
    "sluice-proxy-7c9d8f6b5-m2x9p",
    "sluice-proxy-7c9d8f6b5-x2kfp",
];

fn config(upstream: &str, marker: u32) -> String {
    format!(
        "# version {marker}\nadmin: {{ listen: 0.0.0.0:{ADMIN}, tokenFile: token }}\ndrainTimeout: 2s\nvirtualClusters:\n  - name: orders\n    upstream: {{ bootstrapServers: [\"{upstream}\"], checkTimeout: 3s }}\n    gateway: {{ listenHost: 0.0.0.0, advertisedHost: 127.0.0.1, bootstrapPort: 19092, brokerPorts: {{ start: 19093, count: 1, firstNodeId: 111 }} }}\n"
    )
}

fn broker() -> String {
    format!("{HUB}:{BROKER}")
}

struct Pod {
    ns: String,
    addr: std::net::Ipv4Addr,
    volume: Volume,
    proxy: Proc,
    watcher: Option<Proc>,
    _dir: tempfile::TempDir,
}

struct Fleet {
    pods: Vec<Pod>,
    _broker: Proc,
    net: Net,
}

impl Fleet {
    fn start(watcher_flags: &[&str]) -> Fleet {
        let net = Net::new(NAMES.len());
        let hub = net.hub();
        let listen = format!("tcp://{}", broker());
        let mut cmd = net.command(&hub, "tansu");
        cmd.args([
            "broker",
            "--listener-url",
            &listen,
            "--advertised-listener-url",
            &listen,
        ]);
        cmd.args(["--storage-engine", "memory://tansu/"]);
        let mut broker_proc = Proc::spawn("tansu", cmd);
        broker_proc.wait_for_line("ready in", Duration::from_secs(30));
        let out = net
            .command(&hub, "tansu")
            .args([
                "topic",
                "create",
                "fleet",
                "--broker",
                &listen,
                "--partitions",
                "1",
            ])
            .output()
            .expect("create topic");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let peers = (0..NAMES.len())
            .map(|i| format!("http://{}:{ADMIN}", Net::pod_addr(i)))
            .collect::<Vec<_>>()
            .join(",");
        let initial = config(&broker(), 0);
        let mut pods = Vec::new();
        for (i, name) in NAMES.iter().enumerate() {
            let ns = net.pod(i);
            let dir = tempfile::tempdir().expect("temp dir");
            std::fs::write(dir.path().join("token"), TOKEN).expect("token");
            let volume_dir = dir.path().join("config");
            std::fs::create_dir(&volume_dir).expect("volume dir");
            let volume = Volume::create(&volume_dir, "proxy.yaml", initial.as_bytes());
            // The token sits beside the volume, referenced relative to it.
            std::fs::write(volume_dir.join("token"), TOKEN).expect("token");
            let mut cmd = net.command(&ns, bin("sluice-proxy"));
            cmd.arg("run").arg("--config").arg(volume.path());
            cmd.args(["--log-format", "json", "--instance", name]);
            let mut proxy = Proc::spawn(name, cmd);
            proxy.wait_for_line("sluice-proxy ready", Duration::from_secs(30));
            let mut cmd = net.command(&ns, bin("sluice-watcher"));
            cmd.arg("--path").arg(volume.path());
            cmd.args([
                "--proxy",
                &format!("http://127.0.0.1:{ADMIN}"),
                "--metrics-listen",
                &format!("127.0.0.1:{WATCHER}"),
                "--peers",
                &peers,
                "--log-format",
                "json",
            ]);
            cmd.args(watcher_flags);
            cmd.env_remove("POD_NAME");
            let mut watcher = Proc::spawn(&format!("watcher-{i}"), cmd);
            watcher.wait_for_line("watching configuration", Duration::from_secs(20));
            pods.push(Pod {
                ns,
                addr: Net::pod_addr(i),
                volume,
                proxy,
                watcher: Some(watcher),
                _dir: dir,
            });
        }
        Fleet {
            pods,
            _broker: broker_proc,
            net,
        }
    }

    /// Pod `i`'s proxy status, read from the hub.
    fn status(&self, i: usize) -> Option<ConfigStatus> {
        let url = format!("http://{}:{ADMIN}/admin/config/status", self.pods[i].addr);
        let body = self
            .net
            .get(&self.net.hub(), &url, Duration::from_secs(2))?;
        serde_json::from_str(&body).ok()
    }

    /// Pod `i`'s watcher metric (inside its namespace, on loopback).
    fn watcher_metric(&self, i: usize, series: &str) -> Option<f64> {
        let url = format!("http://127.0.0.1:{WATCHER}/metrics");
        let text = self
            .net
            .get(&self.pods[i].ns, &url, Duration::from_secs(2))?;
        text.lines().find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
    }

    /// Publishes `config` on every pod's volume, one right after the other.
    fn swap_all(&mut self, config: &str) -> String {
        for pod in &mut self.pods {
            pod.volume.swap(config.as_bytes());
        }
        sluice_testkit::config::version(config)
    }

    fn wait(&self, what: &str, timeout: Duration, mut done: impl FnMut(&Fleet) -> bool) {
        let deadline = Instant::now() + timeout;
        while !done(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn runs(&self, i: usize, version: &str) -> bool {
        self.status(i)
            .is_some_and(|s| s.current_config_version == version)
    }
}

/// `(start, end)` of pod `i`'s last reload, from its own status (ms since
/// the epoch, parsed from RFC 3339).
fn window(s: &ConfigStatus) -> (u128, u128) {
    let a = s.last_reload_attempt.as_ref().expect("a reload attempt");
    let start = humantime::parse_rfc3339(&a.timestamp)
        .expect("RFC 3339")
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis();
    (start, start + u128::from(a.duration_ms))
}

/// A producer and consumer on the canary's bootstrap port, run inside the
/// canary's namespace (the configuration advertises 127.0.0.1).
fn steady_on(fleet: &Fleet, i: usize) -> python::Steady {
    python::Steady::start_in(
        &fleet.pods[i].ns,
        "127.0.0.1:19092",
        "fleet",
        &format!("fleet-{i}"),
    )
}

#[test]
fn a_swap_on_every_pod_rolls_out_canary_first_one_pod_at_a_time() {
    let mut fleet = Fleet::start(&[
        "--stagger",
        "0s",
        "--jitter",
        "0s",
        "--canary-soak",
        "1s",
        "--peer-timeout",
        "10s",
    ]);
    let client = steady_on(&fleet, 0);
    let v1 = fleet.swap_all(&config(&broker(), 1));
    fleet.wait("all three pods to run v1", Duration::from_secs(60), |f| {
        (0..3).all(|i| f.runs(i, &v1))
    });
    let windows: Vec<(u128, u128)> = (0..3)
        .map(|i| window(&fleet.status(i).expect("status")))
        .collect();
    // Slot order is byte order of the names: pod 0 is the canary.
    assert!(
        windows[0].1 <= windows[1].0,
        "canary before slot 1: {windows:?}"
    );
    assert!(
        windows[1].1 <= windows[2].0,
        "slot 1 before slot 2: {windows:?}"
    );
    // The soak: slot 1 began at least a second after the canary applied.
    assert!(
        windows[1].0 >= windows[0].1 + 1000,
        "soak respected: {windows:?}"
    );
    for i in 0..3 {
        assert_eq!(
            fleet.watcher_metric(i, "sluice_watcher_slot"),
            Some(i as f64)
        );
        assert_eq!(
            fleet.watcher_metric(i, "sluice_watcher_rollout_halted"),
            Some(0.0)
        );
    }
    let report = client.finish();
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["lost"], 0, "{report}");
}

#[test]
fn an_upstream_where_nothing_listens_halts_at_the_canary_and_a_newer_version_clears_it() {
    let mut fleet = Fleet::start(&[
        "--stagger",
        "0s",
        "--jitter",
        "0s",
        "--canary-soak",
        "0s",
        "--peer-timeout",
        "10s",
    ]);
    let before: Vec<ConfigStatus> = (0..3).map(|i| fleet.status(i).expect("status")).collect();
    let client = steady_on(&fleet, 0);
    // The broker's address, a port where nothing listens.
    let bad = fleet.swap_all(&config(&format!("{HUB}:9"), 2));
    fleet.wait(
        "every watcher to report the halt",
        Duration::from_secs(60),
        |f| (0..3).all(|i| f.watcher_metric(i, "sluice_watcher_rollout_halted") == Some(1.0)),
    );
    let canary = fleet.status(0).expect("status");
    let failed = canary
        .last_failed_version
        .expect("the canary kept the failure");
    assert_eq!(failed.version, bad);
    assert_eq!(failed.stage, FailureStage::UpstreamCheck);
    assert!(
        failed.reason.contains("connection refused"),
        "{}",
        failed.reason
    );
    assert_eq!(
        canary.current_config_version,
        before[0].current_config_version
    );
    for (i, was) in before.iter().enumerate().skip(1) {
        let s = fleet.status(i).expect("status");
        assert_eq!(
            s.last_reload_attempt, was.last_reload_attempt,
            "pod {i} got no reload"
        );
        assert_eq!(
            s.last_validation_attempt, was.last_validation_attempt,
            "pod {i} got no validate"
        );
    }
    // `sluice-watcher fleet` shows it: exit status 1, the canary's failure.
    let peers = (0..NAMES.len())
        .map(|i| format!("http://{}:{ADMIN}", Net::pod_addr(i)))
        .collect::<Vec<_>>()
        .join(",");
    let out = fleet
        .net
        .command(&fleet.net.hub(), bin("sluice-watcher"))
        .args(["fleet", "--peers", &peers, "--format", "json"])
        .output()
        .expect("sluice-watcher fleet");
    assert_eq!(
        out.status.code(),
        Some(1),
        "a halted rollout is exit status 1"
    );
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(view["halted"], true);
    assert_eq!(view["pods"][0]["instance"], NAMES[0]);
    assert!(
        view["pods"][0]["failed"]
            .as_str()
            .unwrap_or_default()
            .contains("connection refused"),
        "{view}"
    );
    let report = client.finish();
    assert_eq!(
        report["error_count"], 0,
        "the canary's clients never noticed: {report}"
    );
    // A newer valid version rolls out through all three and clears the halt.
    let good = fleet.swap_all(&config(&broker(), 3));
    fleet.wait("all three to run the fix", Duration::from_secs(60), |f| {
        (0..3).all(|i| f.runs(i, &good))
    });
    for i in 0..3 {
        assert_eq!(
            fleet.watcher_metric(i, "sluice_watcher_rollout_halted"),
            Some(0.0)
        );
    }
}

#[test]
fn a_peer_killed_mid_rollout_is_left_out_after_the_peer_timeout() {
    let mut fleet = Fleet::start(&[
        "--stagger",
        "0s",
        "--jitter",
        "0s",
        "--canary-soak",
        "0s",
        "--peer-timeout",
        "3s",
    ]);
    // A first rollout, with every pod up: every watcher knows every peer.
    let v1 = fleet.swap_all(&config(&broker(), 4));
    fleet.wait("all three to run v1", Duration::from_secs(60), |f| {
        (0..3).all(|i| f.runs(i, &v1))
    });
    // Slot 1 dies (its proxy and its watcher); then the next version.
    fleet.pods[1].watcher = None;
    fleet.pods[1].proxy.stop("KILL", Duration::from_secs(5));
    let v2 = fleet.swap_all(&config(&broker(), 5));
    fleet.wait(
        "slot 2 to apply without slot 1",
        Duration::from_secs(60),
        |f| f.runs(0, &v2) && f.runs(2, &v2),
    );
    // Slot 2 held for slot 1 (which still said v1) until it was silent for
    // the peer timeout, then left it out.
    let canary = window(&fleet.status(0).expect("status"));
    let last = window(&fleet.status(2).expect("status"));
    assert!(
        last.0 >= canary.1 + 2_500,
        "slot 2 waited out the peer timeout: {canary:?} {last:?}"
    );
    assert!(
        fleet
            .watcher_metric(2, "sluice_watcher_peers_left_out_total")
            .unwrap_or(0.0)
            >= 1.0
    );
    assert_eq!(
        fleet.watcher_metric(2, "sluice_watcher_peers{state=\"silent\"}"),
        Some(1.0)
    );
    assert_eq!(
        fleet.watcher_metric(2, "sluice_watcher_rollout_halted"),
        Some(0.0)
    );
}
