//! The data plane with TLS from the clients: rdkafka speaks TLS to
//! sluice-proxy and to haproxy, each terminating it with the same
//! certificate and speaking plaintext to its broker. Produce (acks=1) and
//! consume throughput and the proxy's CPU per GB, the two paths taking
//! turns, each first in every other repetition.

use crate::dataplane::{Plan, Results, produce, throughput};
use crate::rig::{Path, Rig};
use sluice_tools::record::{Row, Target};

const SECTION: &str = "data plane, TLS";
const PATHS: [Path; 2] = [Path::SluiceTls, Path::HaproxyTls];
const CPU: &str = "mcore/(MB/s)";

/// Runs both cases on both paths, `plan.reps` times, and emits the figures.
pub(crate) fn run(rig: &mut Rig, plan: Plan) {
    let r = measure(rig, plan, PATHS, "tls");
    let (s, h) = (Path::SluiceTls, Path::HaproxyTls);
    let at_least = (Target::RatioAtLeast(1.0), ">= 1.00x haproxy");
    let at_most = (Target::RatioAtMost(1.0), "<= 1.00x haproxy");
    for (key, case, unit, (target, words)) in [
        (
            "produce1",
            "produce acks=1 over TLS: sluice-proxy vs haproxy",
            "MB/s",
            at_least,
        ),
        (
            "consume",
            "consume over TLS: sluice-proxy vs haproxy",
            "MB/s",
            at_least,
        ),
        (
            "produce1 cpu",
            "proxy CPU per GB over TLS, produce acks=1: sluice-proxy",
            CPU,
            at_most,
        ),
        (
            "consume cpu",
            "proxy CPU per GB over TLS, consume: sluice-proxy",
            CPU,
            at_most,
        ),
    ] {
        Row::new(SECTION, case, unit, r.get(key, s))
            .baseline("haproxy", r.get(key, h))
            .target(target, words)
            .note("both terminate TLS (same certificate), plaintext to the broker; CPU-seconds per GB of record payload = millicores per MB/s")
            .emit();
    }
}

/// Produce (acks=1) and consume throughput on two paths, `plan.reps` times,
/// the paths taking turns (each first in every other repetition), after
/// one unrecorded warm-up run of each case on each; `label` names the
/// section in progress lines.
pub(crate) fn measure(rig: &mut Rig, plan: Plan, paths: [Path; 2], label: &str) -> Results {
    let mb = plan.megabytes.to_string();
    let records = (plan.megabytes * 1024).to_string();
    // The topics the consume runs read, written through the path itself.
    let filled: Vec<(Path, String)> = paths
        .iter()
        .map(|&p| {
            let topic = rig.topic(p);
            let flags = rig.client_flags(p);
            let mut args = vec!["produce", rig.bootstrap(p), &topic, &mb, "1"];
            args.extend(flags.iter().map(String::as_str));
            rig.load(p, &args);
            (p, topic)
        })
        .collect();
    let fill = |p: Path| filled.iter().find(|(q, _)| *q == p).map(|(_, t)| t.clone());

    eprintln!("{label}: warm-up, one unrecorded run of each case on each path");
    for path in paths {
        produce(rig, path, "32", "1");
        throughput(
            rig,
            path,
            &["consume", &records],
            &fill(path).expect("filled"),
        );
    }
    let mut r = Results::default();
    for rep in 0..plan.reps {
        eprintln!("{label}: repetition {} of {}", rep + 1, plan.reps);
        let order = [paths[rep % 2], paths[(rep + 1) % 2]];
        for &path in &order {
            let run = produce(rig, path, &mb, "1");
            r.record("produce1", path, &run);
        }
        for &path in &order {
            let topic = fill(path).expect("filled");
            let run = throughput(rig, path, &["consume", &records], &topic);
            r.record("consume", path, &run);
        }
    }
    r
}
