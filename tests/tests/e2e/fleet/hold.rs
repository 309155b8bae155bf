//! A halted version never spreads by restart (issue 27, item 4). Every
//! proxy of the fleet starts held (`run --hold`, as the manifests start it):
//! its watcher picks the version it serves from what its peers vouch for. A
//! pod killed while the fleet holds a rollout halted comes back with the
//! halted version in its volume, and serves the fleet's last good version,
//! read from a peer; its watcher then halts the volume's version like its
//! peers. A fleet restarted at once has no healthy peer to ask: each pod
//! serves its volume's version and says so. Before, a restarted pod served
//! its volume's version, the halted one.

use std::time::Duration;

use sluice_testkit::netns::HUB;
use sluice_tests::fleet::{Fleet, config};

use super::{gated, steady_on};

fn halted(fleet: &Fleet, i: usize) -> Option<f64> {
    fleet.watcher_metric(i, "sluice_watcher_rollout_halted")
}

#[test]
fn a_pod_restarted_during_a_halt_serves_the_last_good_version_and_a_fleet_restarted_at_once_its_volume()
 {
    let mut fleet = gated("0s", "10s");
    let good = fleet.status(0).expect("status").current_config_version;
    // The broker's address, a port where nothing listens: halts at the canary.
    let bad = fleet.swap_all(&config(&format!("{HUB}:9"), 2));
    fleet.wait(
        "every watcher to report the halt",
        Duration::from_secs(60),
        |f| (0..3).all(|i| halted(f, i) == Some(1.0)),
    );

    // Pod 2 (not the canary) dies and comes back, its volume holding the
    // halted version: held first, then the fleet's last good version.
    fleet.kill(2);
    fleet.start_proxy(2);
    let restarted = fleet.status(2).expect("status");
    assert!(restarted.held, "held until its watcher decides");
    assert_eq!(restarted.current_config_version.as_str(), bad);
    fleet.start_watcher(2);
    fleet.watcher(2).wait_for_line(
        "started from the fleet's last good version",
        Duration::from_secs(30),
    );
    let s = fleet.status(2).expect("status");
    assert!(!s.held);
    assert_eq!(
        s.current_config_version, good,
        "serves the fleet's last good version, not its volume's"
    );
    let client = steady_on(&fleet, 2);
    // Its watcher halts the volume's version too: never applied.
    fleet.wait(
        "the restarted watcher to report the halt",
        Duration::from_secs(60),
        |f| halted(f, 2) == Some(1.0),
    );
    let report = client.finish();
    assert_eq!(report["error_count"], 0, "{report}");
    assert!(report["acked"].as_u64().unwrap_or(0) > 0, "{report}");
    assert!(fleet.runs(2, good.as_str()), "still the good version");

    // Every pod at once: nobody healthy to ask. The first watcher serves
    // its volume's version alone and says so; the others then find it
    // vouching for that version.
    for i in 0..3 {
        fleet.kill(i);
    }
    for i in 0..3 {
        fleet.start_proxy(i);
    }
    fleet.start_watcher(0);
    fleet.watcher(0).wait_for_line(
        "no healthy peer vouches for a version: serving the volume's version",
        Duration::from_secs(30),
    );
    for i in 1..3 {
        fleet.start_watcher(i);
        fleet.watcher(i).wait_for_line(
            "a healthy peer vouches for the version held",
            Duration::from_secs(30),
        );
    }
    for i in 0..3 {
        let s = fleet.status(i).expect("status");
        assert!(!s.held, "pod {i} serves");
        assert_eq!(
            s.current_config_version.as_str(),
            bad,
            "pod {i}: its volume's"
        );
    }
}
