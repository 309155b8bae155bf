//! Rollout edges (issue 27, item 5), each against the real gate: a pod
//! replaced mid-rollout under a new name (the ranks change), a watcher
//! restarted during a halt, the canary killed during its soak, and two
//! versions in quick succession during a soak.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_admin_api::ConfigStatus;
use sluice_testkit::netns::HUB;
use sluice_tests::fleet::{Fleet, broker, config, window};

use super::gated;

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis()
}

fn statuses(fleet: &Fleet) -> Vec<ConfigStatus> {
    (0..fleet.pods.len())
        .map(|i| fleet.status(i).expect("status"))
        .collect()
}

fn halted(fleet: &Fleet, i: usize) -> Option<f64> {
    fleet.watcher_metric(i, "sluice_watcher_rollout_halted")
}

#[test]
fn a_pod_replaced_mid_rollout_under_a_new_name_reranks_and_the_rollout_completes_one_pod_at_a_time()
{
    let mut fleet = gated("5s", "10s");
    let v = fleet.swap_all(&config(&broker(), 1));
    fleet.wait("the canary to run it", Duration::from_secs(30), |f| {
        f.runs(0, &v)
    });
    // During the canary's soak, pod 1 is replaced by a pod whose random
    // name sorts first: it starts from the volume (the new version) and
    // takes slot 0; the old canary moves to slot 1.
    fleet.replace(1, "sluice-proxy-7c9d8f6b5-a5tqd");
    assert!(!fleet.runs(2, &v), "slot 2 still waits out the soak");
    fleet.wait("every pod to run it", Duration::from_secs(60), |f| {
        (0..3).all(|i| f.runs(i, &v))
    });
    let s = statuses(&fleet);
    assert_eq!(s[1].instance, "sluice-proxy-7c9d8f6b5-a5tqd");
    assert_eq!(
        s[1].last_reload_attempt, None,
        "the new pod started from the volume's version"
    );
    // The two reloads never overlapped, and the soak held.
    let (canary, last) = (window(&s[0]), window(&s[2]));
    assert!(
        canary.1 + 5_000 <= last.0,
        "slot 2 after the canary and its soak: {canary:?} {last:?}"
    );
    for i in 0..3 {
        assert_eq!(halted(&fleet, i), Some(0.0), "pod {i}");
    }
    // The next version goes by the new ranks: the new pod first, then the
    // old canary after the soak, then pod 2.
    let v2 = fleet.swap_all(&config(&broker(), 2));
    fleet.wait("every pod to run v2", Duration::from_secs(60), |f| {
        (0..3).all(|i| f.runs(i, &v2))
    });
    let w: Vec<(u128, u128)> = statuses(&fleet).iter().map(window).collect();
    assert!(
        w[1].1 + 5_000 <= w[0].0 && w[0].1 <= w[2].0,
        "the new canary, its soak, then the old canary, then pod 2: {w:?}"
    );
    for (i, slot) in [(0, 1.0), (1, 0.0), (2, 2.0)] {
        assert_eq!(
            fleet.watcher_metric(i, "sluice_watcher_slot"),
            Some(slot),
            "pod {i}"
        );
    }
}

#[test]
fn a_watcher_restarted_during_a_halt_re_derives_it_and_sends_nothing() {
    let mut fleet = gated("0s", "10s");
    let before = statuses(&fleet);
    // The broker's address, a port where nothing listens: the canary's
    // upstream check fails.
    let _bad = fleet.swap_all(&config(&format!("{HUB}:9"), 2));
    fleet.wait(
        "every watcher to report the halt",
        Duration::from_secs(60),
        |f| (0..3).all(|i| halted(f, i) == Some(1.0)),
    );
    let at_halt = statuses(&fleet);
    // The canary's watcher and a follower's, restarted: each must learn
    // the halt from the peers' statuses alone.
    fleet.restart_watcher(0);
    fleet.restart_watcher(1);
    fleet.wait(
        "the restarted watchers to report the halt",
        Duration::from_secs(30),
        |f| (0..2).all(|i| halted(f, i) == Some(1.0)),
    );
    for i in 0..2 {
        let lines = fleet.pods[i].watcher.as_ref().expect("watcher").lines();
        assert!(
            lines.iter().any(|l| l.contains("rollout halted")),
            "watcher {i} says why:\n{}",
            lines.join("\n")
        );
    }
    let now = statuses(&fleet);
    for i in 0..3 {
        assert_eq!(
            now[i].last_validation_attempt, at_halt[i].last_validation_attempt,
            "pod {i}: no validate after the restart"
        );
        assert_eq!(
            now[i].last_reload_attempt, at_halt[i].last_reload_attempt,
            "pod {i}: no reload after the restart"
        );
    }
    fleet.assert_only_the_canary_was_asked(&before);
}

#[test]
fn the_canary_killed_during_its_soak_gives_no_credit_for_its_partial_soak() {
    const SOAK_MS: u128 = 6_000;
    const PEER_TIMEOUT_MS: u128 = 8_000;
    let mut fleet = gated("6s", "8s");
    let v = fleet.swap_all(&config(&broker(), 1));
    fleet.wait("the canary to run it", Duration::from_secs(30), |f| {
        f.runs(0, &v)
    });
    let applied = window(&fleet.status(0).expect("status")).1;
    fleet.pods[0].kill();
    let killed = now_ms();
    assert!(
        killed < applied + SOAK_MS,
        "killed within the soak: applied {applied}, killed {killed}"
    );
    fleet.wait(
        "slots 1 and 2 to run it without the canary",
        Duration::from_secs(60),
        |f| f.runs(1, &v) && f.runs(2, &v),
    );
    let (first, second) = (
        window(&fleet.status(1).expect("status")),
        window(&fleet.status(2).expect("status")),
    );
    // Slot 1 becomes the canary only once the dead one is left out (silent
    // for the peer timeout), never on the dead canary's soak clock.
    assert!(
        first.0 >= killed + PEER_TIMEOUT_MS,
        "slot 1 applied {} ms after the canary died (applied {} ms before it): \
         it went on the dead canary's partial soak, before the peer timeout ({PEER_TIMEOUT_MS} ms) left it out",
        first.0.saturating_sub(killed),
        killed.saturating_sub(applied),
    );
    // Slot 2 waits a full soak on the new canary.
    assert!(
        second.0 >= first.1 + SOAK_MS,
        "slot 2 a full soak after slot 1: {first:?} {second:?}"
    );
}

#[test]
fn two_versions_in_quick_succession_during_a_soak_only_the_newest_passes_the_canary() {
    let mut fleet = gated("5s", "10s");
    let v1 = fleet.swap_all(&config(&broker(), 1));
    fleet.wait("the canary to run v1", Duration::from_secs(30), |f| {
        f.runs(0, &v1)
    });
    let v2 = fleet.swap_all(&config(&broker(), 2));
    fleet.wait("every pod to run v2", Duration::from_secs(60), |f| {
        for i in 1..3 {
            assert!(
                !f.runs(i, &v1),
                "pod {i} runs v1, superseded during the soak"
            );
        }
        (0..3).all(|i| f.runs(i, &v2))
    });
    // The proxies' audit lines: the canary was asked about v1, no other pod.
    let asked_about = |i: usize, v: &str| {
        fleet.pods[i]
            .proxy
            .lines()
            .into_iter()
            .filter(|l| l.contains("admin call") && l.contains(v))
            .count()
    };
    assert!(asked_about(0, &v1) > 0, "the audit lines name the version");
    for i in 1..3 {
        assert_eq!(asked_about(i, &v1), 0, "pod {i} was asked about v1");
        assert!(asked_about(i, &v2) > 0, "pod {i} was asked about v2");
    }
    // The soak started over for v2.
    let (canary, next) = (
        window(&fleet.status(0).expect("status")),
        window(&fleet.status(1).expect("status")),
    );
    assert!(
        canary.1 + 5_000 <= next.0,
        "slot 1 a full soak after the canary applied v2: {canary:?} {next:?}"
    );
}
