//! What a tenant's namespace costs (issue 48): the same proxy and broker,
//! two clusters, one a tenant (`tenancy`: every name prefixed upstream),
//! one not. Produce (acks=1) and consume throughput, the proxy's CPU per
//! GB and its peak RSS, at 1 KiB and 16 KiB records, the paths taking
//! turns, each first in every other repetition: as many repetitions as
//! the other sections, of runs half their length.

use crate::dataplane::{Plan, Results, throughput};
use crate::rig::{Path, Rig};
use sluice_tools::record::{Row, Target};

const SECTION: &str = "data plane, tenancy";
const CPU: &str = "mcore/(MB/s)";
const PATHS: [Path; 2] = [Path::SluiceTenant, Path::Sluice];

/// Runs both cases at both sizes on both paths, and emits the figures.
pub(crate) fn run(rig: &mut Rig, plan: Plan) {
    let plan = Plan {
        megabytes: (plan.megabytes / 2).max(16),
        ..plan
    };
    for size in [1024usize, 16384] {
        let r = measure(rig, plan, size);
        emit(&r, size);
    }
}

fn measure(rig: &mut Rig, plan: Plan, size: usize) -> Results {
    let mb = plan.megabytes.to_string();
    let records = (plan.megabytes as usize * (1 << 20) / size).to_string();
    let size_arg = size.to_string();
    let sized = |args: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        all.extend(["--size".to_owned(), size_arg.clone()]);
        all
    };
    let filled: Vec<String> = PATHS
        .iter()
        .map(|&p| {
            let topic = rig.topic(p);
            let args = sized(&["produce", &mb, "1"]);
            throughput(
                rig,
                p,
                &args.iter().map(String::as_str).collect::<Vec<_>>(),
                &topic,
            );
            topic
        })
        .collect();
    let mut r = Results::default();
    // One unrecorded run of each first: the warm-up.
    for rep in 0..=plan.reps {
        if rep > 0 {
            eprintln!("tenancy {size} B: repetition {rep} of {}", plan.reps);
        }
        let order = [rep % 2, (rep + 1) % 2];
        for i in order {
            let path = PATHS[i];
            let topic = rig.topic(path);
            let args = sized(&["produce", &mb, "1"]);
            let run = throughput(
                rig,
                path,
                &args.iter().map(String::as_str).collect::<Vec<_>>(),
                &topic,
            );
            rig.drop_topic(path, &topic);
            if rep > 0 {
                r.record("produce1", path, &run);
            }
        }
        for i in order {
            let path = PATHS[i];
            let args = sized(&["consume", &records]);
            let run = throughput(
                rig,
                path,
                &args.iter().map(String::as_str).collect::<Vec<_>>(),
                &filled[i],
            );
            if rep > 0 {
                r.record("consume", path, &run);
            }
        }
    }
    r
}

fn emit(r: &Results, size: usize) {
    let (t, s) = (Path::SluiceTenant, Path::Sluice);
    let faster = (Target::RatioAtLeast(0.97), ">= 0.97x no tenancy");
    let cheaper = (Target::RatioAtMost(1.0 / 0.97), "<= 1.03x no tenancy");
    let kib = size / 1024;
    let rows: [(&'static str, String, &str, (Target, &str)); 4] = [
        (
            "produce1",
            format!("produce acks=1, {kib} KiB records: tenant vs no tenancy"),
            "MB/s",
            faster,
        ),
        (
            "consume",
            format!("consume, {kib} KiB records: tenant vs no tenancy"),
            "MB/s",
            faster,
        ),
        (
            "produce1 cpu",
            format!("proxy CPU per GB, produce acks=1, {kib} KiB records: tenant vs no tenancy"),
            CPU,
            cheaper,
        ),
        (
            "consume cpu",
            format!("proxy CPU per GB, consume, {kib} KiB records: tenant vs no tenancy"),
            CPU,
            cheaper,
        ),
    ];
    for (key, case, unit, (target, words)) in rows {
        Row::new(SECTION, case, unit, r.get(key, t))
            .baseline("no tenancy", r.get(key, s))
            .target(target, words)
            .note("same proxy and broker; the tenant's Produce requests are held whole and renamed, its Fetch responses (v13 on: topics by id) pass as they come")
            .emit();
    }
    for (key, case) in [
        ("produce1 peak", "produce acks=1"),
        ("consume peak", "consume"),
    ] {
        Row::new(
            SECTION,
            format!("proxy peak RSS, {case}, {kib} KiB records: tenant vs no tenancy"),
            "MiB",
            r.get(key, t),
        )
        .baseline("no tenancy", r.get(key, s))
        .note("the most RSS of the proxy during a run")
        .emit();
    }
}
