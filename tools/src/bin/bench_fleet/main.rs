//! The fleet rollout's cost, with real proxies, real watchers and a real
//! broker, each pod in a network namespace of this program's own
//! (`sluice_tests::fleet`); needs root. Three cases:
//!
//! - [`gate`] (`gate`): a swap on 3 pods to all running it, the canary gate
//!   against the gate off;
//! - [`analysis`] (`analysis`): a benign change on 3 pods through the gate,
//!   with the client-side analysis on against off (`analysis: { enabled:
//!   false }`), the same soak;
//! - [`wide`] (`wide`): a benign change over 20 pods, its total time against
//!   the canary soak + 19 × the stagger, and the status requests each pod
//!   serves per second while it runs (peer polling is O(N²)).
//!
//! usage: bench_fleet [--reps N] [--only gate,analysis,wide] [--pods N]
//! (BENCH lines on stdout, text on stderr)

use std::time::{SystemTime, UNIX_EPOCH};

mod analysis;
mod gate;
mod measure;
mod wide;

fn arg(name: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != name).nth(1)
}

fn main() {
    let reps = arg("--reps")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(5);
    let pods = arg("--pods")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| (2..=200).contains(n))
        .unwrap_or(20);
    let only = arg("--only").unwrap_or_else(|| "gate,analysis,wide".to_owned());
    let wants = |case: &str| only.split(',').any(|c| c == case);
    if wants("gate") {
        gate::run(reps);
    }
    if wants("analysis") {
        analysis::run(reps);
    }
    if wants("wide") {
        wide::run(pods);
    }
}

/// Milliseconds since the epoch, the clock the proxies' statuses use.
fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis()
}
