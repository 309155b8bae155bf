//! The canary judges a version by what its clients see (issue 27). A
//! version that is valid, passes the upstream check and breaks the clients
//! (an advertised address where nothing listens; a first node id that maps
//! no port to the broker's node id) must end with the canary back on the
//! last good version within its soak, no other pod asked to validate or
//! reload it, every watcher halted with the reason, and the client through
//! the canary producing again without a restart. Before the client-side
//! analysis, the gate saw a ready canary with no failed cluster and let the
//! version through to every pod. Benign changes ([`benign`]) must keep
//! rolling out with no client error, a "hairpin" pod included.

use std::time::{Duration, Instant};

use sluice_admin_api::{ConfigStatus, FailureStage, Verdict};
use sluice_testkit::netns::HUB;
use sluice_tests::fleet::{Cluster, Fleet, broker, config_with};

use super::{gated, steady_on};

mod benign;

/// The canary's soak: the canary must be back on the last good version
/// well within it (the front-door check takes a few round trips).
const SOAK: Duration = Duration::from_secs(15);

/// Each pod's version in words, for failure messages.
fn where_each_pod_is(fleet: &Fleet, good: &str, bad: &str) -> String {
    (0..fleet.pods.len())
        .map(|i| {
            let what = match fleet.status(i) {
                None => "no answer".to_owned(),
                Some(s) if s.current_config_version.as_str() == good => "good".to_owned(),
                Some(s) if s.current_config_version.as_str() == bad => "bad".to_owned(),
                Some(s) => s.current_config_version.as_str().to_owned(),
            };
            format!("pod {i}: {what}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Publishes `bad` on every pod under a steady client of the canary, and
/// asserts what the Done-when list of issue 27 says; `step` is the
/// front-door step the reason names.
fn a_version_that_breaks_the_clients_returns_and_halts(bad: &Cluster, step: &str) {
    let mut fleet = gated("15s", "30s");
    let before: Vec<ConfigStatus> = (0..3).map(|i| fleet.status(i).expect("status")).collect();
    let good = before[0].current_config_version.as_str().to_owned();
    let client = steady_on(&fleet, 0);
    let bad_version = fleet.swap_all(&config_with(&broker(), 1, bad));
    let swapped = Instant::now();
    fleet.wait(
        "the canary back on the last good version",
        SOAK + Duration::from_secs(15),
        |f| {
            for i in 1..f.pods.len() {
                assert!(
                    !f.runs(i, &bad_version),
                    "the bad version got past the canary: pod {i} runs it {:.1} s after the swap ({})",
                    swapped.elapsed().as_secs_f64(),
                    where_each_pod_is(f, &good, &bad_version)
                );
            }
            f.status(0).is_some_and(|s| {
                s.current_config_version.as_str() == good
                    && s.last_failed_version
                        .as_ref()
                        .is_some_and(|v| v.version.as_str() == bad_version)
            })
        },
    );
    let returned = swapped.elapsed();
    assert!(
        returned < SOAK,
        "the canary returned after {returned:?}, not within its soak"
    );
    let canary = fleet.status(0).expect("status");
    let failed = canary.last_failed_version.clone().expect("the failure");
    assert_eq!(failed.stage, FailureStage::ClientCheck, "{failed:?}");
    assert!(
        failed.reason.contains("orders") && failed.reason.contains(step),
        "the reason names the cluster and the step {step}: {}",
        failed.reason
    );
    assert_eq!(canary.effective_version, before[0].effective_version);
    let analysis = canary.analysis.expect("the canary's analysis");
    assert_eq!(analysis.version.as_str(), bad_version);
    assert_eq!(analysis.verdict, Verdict::Regressed);
    assert!(analysis.reverted, "{analysis:?}");

    fleet.wait(
        "every watcher to report the halt",
        Duration::from_secs(30),
        |f| (0..3).all(|i| f.watcher_metric(i, "sluice_watcher_rollout_halted") == Some(1.0)),
    );
    for (i, pod) in fleet.pods.iter().enumerate() {
        let lines = pod.watcher.as_ref().expect("watcher").lines();
        assert!(
            lines
                .iter()
                .any(|l| l.contains("rollout halted") && l.contains("orders")),
            "watcher {i} logs the halt with the reason:\n{}",
            lines.join("\n")
        );
    }
    fleet.assert_only_the_canary_was_asked(&before);

    // The client of the canary recovers, nothing restarted.
    let then = client.progress();
    fleet.wait(
        "the canary's client producing again",
        Duration::from_secs(60),
        |_| client.progress().acked >= then.acked + 100,
    );
}

#[test]
fn an_advertised_address_where_nothing_listens_returns_the_canary_and_halts() {
    // The hub's address: inside the test's namespaces, nothing listens on
    // the gateway's ports there (connection refused).
    let bad = Cluster {
        advertised_host: HUB.to_string(),
        ..Cluster::default()
    };
    a_version_that_breaks_the_clients_returns_and_halts(&bad, "bootstrap");
}

#[test]
fn a_first_node_id_that_maps_no_port_to_the_broker_returns_the_canary_and_halts() {
    // One broker port, for node 1; tansu is node 111.
    let bad = Cluster {
        first_node_id: 1,
        ..Cluster::default()
    };
    a_version_that_breaks_the_clients_returns_and_halts(&bad, "metadata");
}
