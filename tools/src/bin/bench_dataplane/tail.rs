//! Where the p99 latency gap to haproxy comes from (issue 28). The data-plane
//! benchmark and the sweep run their three latency clients at once, direct,
//! through sluice-proxy and through haproxy, each path on a broker of its
//! own (D, A, B; until 2026-11-26 direct and sluice-proxy shared broker A).
//! Here each repetition runs the clients three ways, in turn: the three at
//! once, as the benchmark does; sluice-proxy and haproxy alone; and direct
//! and haproxy alone (broker D with no proxy in front against broker B
//! behind haproxy: how far two brokers differ by themselves). It reports
//! the first path's p50 and p99 over haproxy's in the same run of each.

use crate::dataplane::{Plan, Results};
use crate::rig::{Path, Rig};
use crate::sweep::latencies;
use sluice_tools::record::{Row, Target};

const SECTION: &str = "latency tail";

/// Who runs at once, and the path compared with haproxy.
const ARRANGEMENTS: [(&str, &[Path], Path); 3] = [
    (
        "three at once",
        &[Path::Direct, Path::Sluice, Path::Haproxy],
        Path::Sluice,
    ),
    (
        "one per broker",
        &[Path::Sluice, Path::Haproxy],
        Path::Sluice,
    ),
    (
        "direct and haproxy",
        &[Path::Direct, Path::Haproxy],
        Path::Direct,
    ),
];

/// Runs every arrangement `plan.reps` times, each first in turn.
pub(crate) fn run(rig: &mut Rig, plan: Plan) {
    let (rate, secs) = (plan.rate.to_string(), plan.latency_secs.to_string());
    let topics: Vec<(Path, String)> = [Path::Direct, Path::Sluice, Path::Haproxy]
        .into_iter()
        .map(|p| (p, rig.topic(p)))
        .collect();
    let topic = |p: Path| {
        topics
            .iter()
            .find(|(q, _)| *q == p)
            .map(|(_, t)| t.clone())
            .unwrap_or_default()
    };
    eprintln!("tail: warm-up");
    at_once(
        rig,
        &[Path::Direct, Path::Sluice, Path::Haproxy],
        &topic,
        &rate,
        "2",
    );
    let mut results: Vec<Results> = ARRANGEMENTS.iter().map(|_| Results::default()).collect();
    for rep in 0..plan.reps {
        eprintln!("tail: repetition {} of {}", rep + 1, plan.reps);
        for k in 0..ARRANGEMENTS.len() {
            let i = (k + rep) % ARRANGEMENTS.len();
            for (path, report) in at_once(rig, ARRANGEMENTS[i].1, &topic, &rate, &secs) {
                let r = &mut results[i];
                r.push("p50", path, report["p50_ms"].as_f64().unwrap_or(f64::NAN));
                r.push("p99", path, report["p99_ms"].as_f64().unwrap_or(f64::NAN));
            }
        }
    }
    let moderate = format!("{} req/s of 1 KiB per path, acks=1", plan.rate);
    for ((name, _, subject), r) in ARRANGEMENTS.iter().zip(&results) {
        let who = if *subject == Path::Direct {
            "direct"
        } else {
            "sluice-proxy"
        };
        for q in ["p50", "p99"] {
            let row = Row::new(
                SECTION,
                format!("{q}, {name}: {who} vs haproxy"),
                "ms",
                r.get(q, *subject),
            )
            .baseline("haproxy", r.get(q, Path::Haproxy))
            .note(moderate.clone());
            let row = if q == "p99" {
                row.target(Target::RatioAtMost(1.0), "<= 1.00x haproxy")
            } else {
                row
            };
            row.emit();
        }
    }
}

/// The latency clients of `paths` at once, `secs` seconds each, of the
/// load client's default 1 KiB records.
fn at_once(
    rig: &Rig,
    paths: &[Path],
    topic: &dyn Fn(Path) -> String,
    rate: &str,
    secs: &str,
) -> Vec<(Path, serde_json::Value)> {
    let topics: Vec<(Path, String)> = paths.iter().map(|&p| (p, topic(p))).collect();
    latencies(rig, &topics, rate, secs, "1024")
}
