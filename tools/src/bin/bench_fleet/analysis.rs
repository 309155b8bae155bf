//! What the client-side analysis adds to a benign rollout: the same change
//! of a cluster (`limits.maxConnections`, so that the cluster changes and
//! the analysis runs) on 3 gated pods with the same soak, the analysis on
//! (its window no longer than the soak) against off (`analysis: { enabled:
//! false }`), measured in the same run. A build that does not know the
//! `analysis` key runs the same configuration twice and says so.

use sluice_tests::fleet::{Cluster, Fleet, Spec, broker, config_with};
use sluice_tools::record::{Row, Target};

use crate::gate::until_all_run;
use crate::measure::analysis_supported;

/// Both runs: gated, no stagger, a 5 s soak, a quick poll.
const FLAGS: [&str; 10] = [
    "--stagger",
    "0s",
    "--jitter",
    "0s",
    "--canary-soak",
    "5s",
    "--peer-timeout",
    "10s",
    "--peer-poll",
    "100ms",
];

/// `reps` rollouts with the analysis and `reps` without, one figure.
pub(crate) fn run(reps: usize) {
    let supported = analysis_supported();
    let (on, off) = if supported {
        (Some("{ window: 5s }"), Some("{ enabled: false }"))
    } else {
        (None, None)
    };
    let with = rollouts(on, reps);
    let without = rollouts(off, reps);
    let note = if supported {
        "window 5 s = the soak: the verdict is in when the soak ends; \
         what it adds is the front-door checks (before the commit and after it) \
         and the wait for the verdict"
    } else {
        "this build has no client-side analysis (the `analysis` key is unknown): \
         both runs are the same configuration, the ratio is the noise"
    };
    Row::new(
        "fleet",
        "benign rollout over 3 pods (soak 5 s), client-side analysis on",
        "ms",
        with,
    )
    .baseline("the same rollout with the analysis off", without)
    .target(
        Target::RatioAtMost(1.10),
        "<= 1.10x: the analysis runs within the soak",
    )
    .note(note)
    .emit();
}

fn cluster(marker: u32, analysis: Option<&str>) -> Cluster {
    Cluster {
        max_connections: Some(1000 + marker),
        analysis: analysis.map(str::to_owned),
        ..Cluster::default()
    }
}

/// `reps` rollouts of a benign change, after one warm-up, in milliseconds.
fn rollouts(analysis: Option<&str>, reps: usize) -> Vec<f64> {
    let mut fleet = Fleet::launch(Spec {
        initial: config_with(&broker(), 0, &cluster(0, analysis)),
        ..Spec::new(&FLAGS)
    });
    (1..=u32::try_from(reps).unwrap_or(u32::MAX).saturating_add(1))
        .map(|marker| {
            let next = config_with(&broker(), marker, &cluster(marker, analysis));
            let version = fleet.swap_all(&next);
            until_all_run(&fleet, &version).as_secs_f64() * 1e3
        })
        .skip(1)
        .collect()
}
