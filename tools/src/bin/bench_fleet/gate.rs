//! The gate's cost: time from one kubelet-style swap on all three pods'
//! volumes to every proxy running the new version, with the canary gate on
//! (`--peers`, stagger 0, soak 0: the pods apply one after another) and, as
//! the baseline measured in the same run, with the gate off (no peers,
//! stagger 0, jitter 0: every pod applies at once).

use std::time::{Duration, Instant};

use sluice_tests::fleet::{Fleet, broker, config};
use sluice_tools::record::{Row, Target};

/// Flags both runs share: no delay but the gate's own order.
const FLAGS: [&str; 6] = ["--stagger", "0s", "--jitter", "0s", "--canary-soak", "0s"];

/// `reps` rollouts with the gate and `reps` without, one figure.
pub(crate) fn run(reps: usize) {
    let gated = rollouts(true, reps);
    let free = rollouts(false, reps);
    Row::new(
        "fleet",
        "rollout of a valid version over 3 pods, canary gate (stagger 0, soak 0)",
        "ms",
        gated,
    )
    .baseline("the same swap with the gate off", free)
    .target(
        Target::AtMost(10_000.0),
        "one pod after another, each in well under a second",
    )
    .note(
        "swap on all three volumes -> every proxy runs the version, read from each proxy's status",
    )
    .emit();
}

/// `reps` rollouts of a new valid version, each timed in milliseconds.
fn rollouts(gate: bool, reps: usize) -> Vec<f64> {
    let mut flags: Vec<&str> = FLAGS.to_vec();
    if gate {
        flags.extend(["--peer-timeout", "10s", "--peer-poll", "100ms"]);
    }
    let mut fleet = Fleet::start_with(gate, &flags);
    // One warm-up rollout: every watcher has met every peer.
    let mut marker = 1;
    let _ = rollout(&mut fleet, marker);
    (0..reps)
        .map(|_| {
            marker += 1;
            rollout(&mut fleet, marker).as_secs_f64() * 1e3
        })
        .collect()
}

fn rollout(fleet: &mut Fleet, marker: u32) -> Duration {
    let version = fleet.swap_all(&config(&broker(), marker));
    until_all_run(fleet, &version)
}

/// Time from now until every pod runs `version` (polled every 5 ms).
pub(crate) fn until_all_run(fleet: &Fleet, version: &str) -> Duration {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(90);
    let mut pending: Vec<usize> = (0..fleet.pods.len()).collect();
    while !pending.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the rollout did not finish in 90 s"
        );
        pending.retain(|i| !fleet.runs(*i, version));
        std::thread::sleep(Duration::from_millis(5));
    }
    started.elapsed()
}
