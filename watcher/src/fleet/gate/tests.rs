//! The gate as a table of situations: slots, peers' statuses, the clock.

use std::time::{Duration, Instant};

use super::*;

/// The version of a configuration named `name`.
fn cv(name: &str) -> ConfigVersion {
    sluice_volume::config_version(name.as_bytes())
}

/// An effective version named `name`.
fn ev(name: &str) -> EffectiveVersion {
    sluice_volume::effective_version(&cv(name), [])
}

const V: &str = "sha256:new";
const OLD: &str = "sha256:old";

fn settings() -> Settings {
    Settings {
        canary_soak: Duration::from_secs(30),
        peer_timeout: Duration::from_secs(30),
    }
}

/// A peer that answered `ago` before `now`, running `version` for `ran`.
fn peer(slot: u64, now: Instant, ago: u64, version: &str, ran: u64) -> Peer {
    let at = now - Duration::from_secs(ago);
    Peer {
        instance: format!("pod-{slot}"),
        slot,
        read_at: Some(at),
        silent_since: None,
        status: Some(PeerStatus {
            version: cv(version),
            effective: None,
            running_for: Duration::from_secs(ran),
            ready: true,
            newly_failed: Vec::new(),
            failed: None,
            analysis: None,
            held: false,
        }),
    }
}

fn t(version: &str) -> Target {
    Target::config(&cv(version))
}

fn fleet(now: Instant, versions: &[(&str, u64)]) -> Vec<Peer> {
    versions
        .iter()
        .enumerate()
        .map(|(i, (v, ran))| peer(i as u64, now, 1, v, *ran))
        .collect()
}

#[test]
fn the_canary_applies_first_and_the_others_wait_for_it() {
    let now = Instant::now();
    let peers = fleet(now, &[(OLD, 100), (OLD, 100), (OLD, 100)]);
    assert_eq!(decide(0, &t(V), &peers, now, &settings()), Decision::Apply);
    assert_eq!(
        decide(1, &t(V), &peers, now, &settings()),
        Decision::Wait("waiting for pod-0 (slot 0) to run the version".into())
    );
    assert_eq!(
        decide(2, &t(V), &peers, now, &settings()),
        Decision::Wait("waiting for pod-0 (slot 0) to run the version".into())
    );
}

#[test]
fn slot_one_waits_out_the_soak_then_slot_two_waits_for_slot_one() {
    let now = Instant::now();
    // The canary has run V for 10 s (read 1 s ago): 11 s of 30.
    let peers = fleet(now, &[(V, 10), (OLD, 100), (OLD, 100)]);
    assert_eq!(
        decide(1, &t(V), &peers, now, &settings()),
        Decision::Wait("canary pod-0 has run the version for 11s of 30s".into())
    );
    let later = now + Duration::from_secs(19);
    assert_eq!(
        decide(1, &t(V), &peers, later, &settings()),
        Decision::Apply
    );
    assert_eq!(
        decide(2, &t(V), &peers, later, &settings()),
        Decision::Wait("waiting for pod-1 (slot 1) to run the version".into())
    );
    let peers = fleet(now, &[(V, 60), (V, 1), (OLD, 100)]);
    assert_eq!(decide(2, &t(V), &peers, now, &settings()), Decision::Apply);
    assert_eq!(decide(1, &t(V), &peers, now, &settings()), Decision::Done);
}

#[test]
fn a_soak_of_zero_opens_the_gate_as_soon_as_lower_slots_run_the_version() {
    let now = Instant::now();
    let s = Settings {
        canary_soak: Duration::ZERO,
        ..settings()
    };
    let peers = fleet(now, &[(V, 0), (OLD, 100)]);
    assert_eq!(decide(1, &t(V), &peers, now, &s), Decision::Apply);
}

#[test]
fn any_peer_that_failed_the_version_halts_everyone_including_the_canary() {
    let now = Instant::now();
    let mut peers = fleet(now, &[(OLD, 100), (OLD, 100), (OLD, 100)]);
    peers[0].status.as_mut().unwrap().failed =
        Some((cv(V).into(), "reload failed: upstream check failed".into()));
    let halt = Decision::Halt {
        instance: "pod-0".into(),
        cause: "reload failed: upstream check failed".into(),
    };
    for me in 0..3 {
        assert_eq!(decide(me, &t(V), &peers, now, &settings()), halt);
    }
    // A newer version is not halted by the old failure.
    assert_eq!(
        decide(0, &t("sha256:newer"), &peers, now, &settings()),
        Decision::Apply
    );
}

#[test]
fn unready_or_a_newly_failed_cluster_within_the_soak_halts_and_after_it_does_not() {
    let now = Instant::now();
    let mut peers = fleet(now, &[(V, 5), (OLD, 100)]);
    peers[0].status.as_mut().unwrap().ready = false;
    assert!(matches!(
        decide(1, &t(V), &peers, now, &settings()),
        Decision::Halt { ref instance, .. } if instance == "pod-0"
    ));
    let mut peers = fleet(now, &[(V, 5), (OLD, 100)]);
    peers[0].status.as_mut().unwrap().newly_failed = vec!["orders".into()];
    assert_eq!(
        decide(1, &t(V), &peers, now, &settings()),
        Decision::Halt {
            instance: "pod-0".into(),
            cause: "virtual cluster(s) failed while running the version: orders".into()
        }
    );
    // Past the soak, an unready canary holds the gate but halts nothing.
    let mut peers = fleet(now, &[(V, 100), (OLD, 100)]);
    peers[0].status.as_mut().unwrap().ready = false;
    assert_eq!(
        decide(1, &t(V), &peers, now, &settings()),
        Decision::Wait("canary pod-0 is not ready".into())
    );
}

#[test]
fn a_silent_peer_is_left_out_after_the_peer_timeout() {
    let now = Instant::now();
    let mut peers = fleet(now, &[(OLD, 100), (OLD, 100), (OLD, 100)]);
    // The canary has not answered for 20 s: still in the gate.
    peers[0].silent_since = Some(now - Duration::from_secs(20));
    assert!(matches!(
        decide(1, &t(V), &peers, now, &settings()),
        Decision::Wait(_)
    ));
    // 31 s: left out; slot 1 is the lowest live slot and applies.
    peers[0].silent_since = Some(now - Duration::from_secs(31));
    assert_eq!(decide(1, &t(V), &peers, now, &settings()), Decision::Apply);
    // Slot 2 then waits for slot 1, the new canary, and its soak.
    assert_eq!(
        decide(2, &t(V), &peers, now, &settings()),
        Decision::Wait("waiting for pod-1 (slot 1) to run the version".into())
    );
    // A peer that never answered is left out once asked for the timeout.
    let mut peers = fleet(now, &[(OLD, 100), (OLD, 100)]);
    peers[0].read_at = None;
    peers[0].status = None;
    peers[0].silent_since = Some(now - Duration::from_secs(5));
    assert!(matches!(
        decide(1, &t(V), &peers, now, &settings()),
        Decision::Wait(_)
    ));
    peers[0].silent_since = Some(now - Duration::from_secs(31));
    assert_eq!(decide(1, &t(V), &peers, now, &settings()), Decision::Apply);
}

#[test]
fn a_silent_peers_old_failure_does_not_halt() {
    let now = Instant::now();
    let mut peers = fleet(now, &[(OLD, 100), (OLD, 100)]);
    peers[0].status.as_mut().unwrap().failed = Some((cv(V).into(), "x".into()));
    peers[0].silent_since = Some(now - Duration::from_secs(40));
    assert_eq!(decide(1, &t(V), &peers, now, &settings()), Decision::Apply);
}

/// `V` with renewed referenced files.
fn renewed() -> Target {
    Target {
        config: cv(V),
        effective: Some(ev("sha256:renewed")),
    }
}

/// `peers[i]` runs `V` with the referenced files of `effective`.
fn with_effective(mut peers: Vec<Peer>, effective: &[&str]) -> Vec<Peer> {
    for (p, e) in peers.iter_mut().zip(effective) {
        p.status.as_mut().unwrap().effective = Some(ev(e));
    }
    peers
}

#[test]
fn renewed_files_under_the_same_configuration_roll_out_canary_first() {
    let now = Instant::now();
    let renewed = renewed();
    // Every pod runs V with the old files: none is done, the canary goes.
    let peers = with_effective(
        fleet(now, &[(V, 100), (V, 100)]),
        &["sha256:e1", "sha256:e1"],
    );
    assert_eq!(
        decide(0, &renewed, &peers, now, &settings()),
        Decision::Apply
    );
    assert_eq!(
        decide(1, &renewed, &peers, now, &settings()),
        Decision::Wait("waiting for pod-0 (slot 0) to run the version".into())
    );
    // The canary runs the renewed files: slot 1 waits out the soak.
    let peers = with_effective(
        fleet(now, &[(V, 5), (V, 100)]),
        &["sha256:renewed", "sha256:e1"],
    );
    assert_eq!(
        decide(1, &renewed, &peers, now, &settings()),
        Decision::Wait("canary pod-0 has run the version for 6s of 30s".into())
    );
    assert_eq!(
        decide(
            1,
            &renewed,
            &peers,
            now + Duration::from_secs(30),
            &settings()
        ),
        Decision::Apply
    );
    assert_eq!(
        decide(0, &renewed, &peers, now, &settings()),
        Decision::Done
    );
}

#[test]
fn a_failure_of_renewed_files_halts_them_and_not_the_configuration() {
    let now = Instant::now();
    let renewed = renewed();
    let mut peers = with_effective(
        fleet(now, &[(V, 100), (V, 100)]),
        &["sha256:e1", "sha256:e1"],
    );
    // An old failure of the configuration (applied since) halts nothing.
    peers[0].status.as_mut().unwrap().failed = Some((cv(V).into(), "old".into()));
    assert_eq!(
        decide(0, &renewed, &peers, now, &settings()),
        Decision::Apply
    );
    // The canary's proxy failed the renewed files: recorded under their
    // effective version, they halt every slot.
    peers[0].status.as_mut().unwrap().failed = Some((
        ev("sha256:renewed").into(),
        "reload failed: key does not match".into(),
    ));
    for me in 0..2 {
        assert!(matches!(
            decide(me, &renewed, &peers, now, &settings()),
            Decision::Halt { ref instance, .. } if instance == "pod-0"
        ));
    }
}

#[test]
fn a_peer_that_reports_no_effective_version_is_taken_at_its_configurations_word() {
    let now = Instant::now();
    let renewed = renewed();
    let peers = fleet(now, &[(V, 100), (OLD, 100)]);
    assert_eq!(
        decide(1, &renewed, &peers, now, &settings()),
        Decision::Apply
    );
}

/// `peers[i]`'s proxy's analysis of `version`.
fn analysed(peers: &mut [Peer], i: usize, version: &str, verdict: Verdict) {
    let findings = match verdict {
        Verdict::Regressed => vec![
            "virtual cluster orders: bootstrap: before: p:9092 worked; after: q:9092: connection refused".to_owned(),
        ],
        _ => Vec::new(),
    };
    peers[i].status.as_mut().unwrap().analysis = Some(PeerAnalysis {
        version: cv(version).into(),
        verdict,
        findings,
        reverted: verdict == Verdict::Regressed,
    });
}

#[test]
fn slot_one_waits_while_the_canarys_analysis_of_the_version_runs_past_the_soak() {
    let now = Instant::now();
    let mut peers = fleet(now, &[(V, 100), (OLD, 100), (OLD, 100)]);
    analysed(&mut peers, 0, V, Verdict::Running);
    let analysing =
        Decision::Wait("canary pod-0 is analysing the version (client-side check)".into());
    assert_eq!(decide(1, &t(V), &peers, now, &settings()), analysing);
    // Within the soak, the soak is what it waits for.
    let mut young = fleet(now, &[(V, 10), (OLD, 100)]);
    analysed(&mut young, 0, V, Verdict::Running);
    assert_eq!(
        decide(1, &t(V), &young, now, &settings()),
        Decision::Wait("canary pod-0 has run the version for 11s of 30s".into())
    );
    // The canary itself is done; a soak of 0 does not skip the analysis.
    assert_eq!(decide(0, &t(V), &peers, now, &settings()), Decision::Done);
    let zero = Settings {
        canary_soak: Duration::ZERO,
        ..settings()
    };
    assert_eq!(decide(1, &t(V), &peers, now, &zero), analysing);
    // Passed or off: the gate opens.
    for verdict in [Verdict::Passed, Verdict::Off] {
        analysed(&mut peers, 0, V, verdict);
        assert_eq!(decide(1, &t(V), &peers, now, &settings()), Decision::Apply);
    }
}

#[test]
fn only_the_canarys_running_analysis_of_this_version_holds_the_gate() {
    let now = Instant::now();
    // An analysis of an older version still running is not this one's.
    let mut peers = fleet(now, &[(V, 100), (OLD, 100)]);
    analysed(&mut peers, 0, OLD, Verdict::Running);
    assert_eq!(decide(1, &t(V), &peers, now, &settings()), Decision::Apply);
    // Slot 1's own analysis does not hold slot 2: only the canary's does.
    let mut peers = fleet(now, &[(V, 100), (V, 5), (OLD, 100)]);
    analysed(&mut peers, 0, V, Verdict::Passed);
    analysed(&mut peers, 1, V, Verdict::Running);
    assert_eq!(decide(2, &t(V), &peers, now, &settings()), Decision::Apply);
}

#[test]
fn a_regressed_analysis_of_the_version_halts_every_slot_with_the_finding() {
    let now = Instant::now();
    // The canary returned to OLD by itself; its lastFailedVersion is gone
    // (a later failure of another version took its place).
    let mut peers = fleet(now, &[(OLD, 1), (OLD, 100), (OLD, 100)]);
    analysed(&mut peers, 0, V, Verdict::Regressed);
    let halt = Decision::Halt {
        instance: "pod-0".into(),
        cause: "client-side check failed: virtual cluster orders: bootstrap: before: p:9092 worked; \
                after: q:9092: connection refused (the proxy returned to the version before by itself)"
            .into(),
    };
    for me in 0..3 {
        assert_eq!(decide(me, &t(V), &peers, now, &settings()), halt);
    }
    // A newer version is not halted by it.
    assert_eq!(
        decide(0, &t("sha256:newer"), &peers, now, &settings()),
        Decision::Apply
    );
    // Nor is a version whose analysis passed.
    analysed(&mut peers, 0, V, Verdict::Passed);
    assert_eq!(decide(0, &t(V), &peers, now, &settings()), Decision::Apply);
}

mod liveness;
