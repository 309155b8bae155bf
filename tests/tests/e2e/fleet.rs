//! The fleet rollout with real proxies, real watchers and a real broker.
//! Each "pod" is a network namespace of the test's own with the same
//! configuration bytes (`listenHost: 0.0.0.0`, the same ports), its own
//! ConfigMap-style volume, its own proxy and watcher; a hub namespace holds
//! the bridge, the broker and the test driver's requests (see
//! `sluice_testkit::netns`). Nothing touches the machine's own namespace.
//! [`canary`]: the client-side analysis at the canary; [`edges`]: pods
//! replaced, watchers restarted, the canary killed, versions superseded.

use std::time::Duration;

use sluice_admin_api::{ConfigStatus, FailureStage};
use sluice_testkit::bin;
use sluice_testkit::netns::{HUB, Net};
use sluice_tests::fleet::{ADMIN, Fleet, NAMES, broker, config, window};
use sluice_tests::python;

mod canary;
mod edges;
mod hold;
mod renewal;

/// Three pods whose watchers know each other: no stagger or jitter, the
/// canary soak and the peer timeout as given.
pub(crate) fn gated(canary_soak: &str, peer_timeout: &str) -> Fleet {
    Fleet::start(&[
        "--stagger",
        "0s",
        "--jitter",
        "0s",
        "--canary-soak",
        canary_soak,
        "--peer-timeout",
        peer_timeout,
    ])
}

/// A producer and consumer on the canary's bootstrap port, run inside the
/// canary's namespace (the configuration advertises 127.0.0.1).
pub(crate) fn steady_on(fleet: &Fleet, i: usize) -> python::Steady {
    python::Steady::start_in(
        &fleet.pods[i].ns,
        "127.0.0.1:19092",
        "fleet",
        &format!("fleet-{i}"),
    )
}

#[test]
fn a_swap_on_every_pod_rolls_out_canary_first_one_pod_at_a_time() {
    let mut fleet = gated("1s", "10s");
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
    let mut fleet = gated("0s", "10s");
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
    assert_eq!(failed.version.as_str(), bad);
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
    fleet.assert_only_the_canary_was_asked(&before);
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
    let mut fleet = gated("0s", "3s");
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
