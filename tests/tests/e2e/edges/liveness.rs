//! A watcher waiting its turn is alive. Its liveness threshold is
//! 2 × resync + retry deadline + 30 s (33 s here); a high slot's stagger
//! (40 s here) is longer. Before the fix the wait stamped no heartbeat:
//! `/healthz` turned 503 in the middle of a legitimate wait, and Kubernetes
//! would have restarted the sidecar, which then applied at once, out of
//! order.

use std::time::{Duration, Instant};

use sluice_testkit::config::version;
use sluice_testkit::rig::Rig;

#[test]
fn a_stagger_wait_longer_than_the_liveness_threshold_keeps_healthz_green() {
    let mut rig = Rig::start(&[
        "--slot",
        "20",
        "--stagger",
        "2s",
        "--jitter",
        "0s",
        "--resync",
        "1s",
        "--retry-deadline",
        "1s",
    ]);
    let next = rig.config(1);
    rig.volume.swap(next.as_bytes());
    let swapped = Instant::now();
    rig.watcher
        .wait_for_log("waiting for this pod's turn", Duration::from_secs(10));
    // Past the 33 s threshold, still well inside the 40 s wait.
    while swapped.elapsed() < Duration::from_secs(37) {
        let health = rig.watcher.get("/healthz");
        assert_eq!(
            health.status,
            200,
            "{} s into the wait: {}",
            swapped.elapsed().as_secs(),
            health.body
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_ne!(
        rig.proxy.version(),
        version(&next),
        "applied before its turn"
    );
    rig.proxy
        .wait_for_version(&version(&next), Duration::from_secs(30));
}
