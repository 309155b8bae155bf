//! The record-size sweep (issue 28): produce (acks=1) and consume
//! throughput, the middle process's CPU per GB, the broker's CPU per GB (what
//! the path costs the peer that bounds produce), and produce-to-acknowledgement
//! latency p50/p99 at records of 100 B, 1 KiB, 4 KiB and 16 KiB, direct,
//! through sluice-proxy and through haproxy, each case twice: on the machine
//! as it is ("quiet"), and beside a CPU hog that keeps one core busy (the
//! same hog for every path: a busy loop in a process of its own, started
//! before the case and killed by its PID after, not pinned, at the default
//! priority, so the scheduler shares the two cores among it and the peers).
//!
//! A produce run writes `--megabytes` times the size's produce factor, a
//! consume run reads its consume factor's worth, from a topic written once
//! per size and path (each path on a broker of its own). The factors make
//! runs of about the same length at every size (0.4-0.7 s here at the
//! default 32): at a fixed 32 MB a 16 KiB produce run took 0.15 s, and a
//! cell's per-repetition ratios spread twice as wide as with 128 MB.
//!
//! Paths are interleaved within each repetition as in the data-plane
//! section: throughput runs one path at a time in rotating order, the three
//! latency clients at once. The quiet and the hog case of a size take turns
//! at going first. Every ratio is paired per repetition, against haproxy and
//! against direct.
//!
//! Each repetition runs on peers of its own: brokers, haproxy and
//! sluice-proxy started anew, its topics written through each path, one
//! unrecorded consume run of each size on each path. With one set of peers
//! for the whole sweep, a cell's repetitions leaned one way together, and
//! sweeps of one build disagreed beyond their intervals: 1 KiB quiet p50,
//! 15 of 15 ratios above 1.00x in one sweep (median 1.11x, 1.09-1.27), 11 of
//! 15 below in another (0.94x); what a set of processes settles into
//! (where the scheduler puts their threads, how their heaps lie) lasted as
//! long as they did (docs/benchmarks.md, "how far ahead a proxy can be").

use std::collections::HashMap;

use crate::dataplane::{Plan, Run, throughput};
use crate::hog::Hog;
use crate::rig::{Path, Rig, load};
use sluice_tools::record::{Row, Target};

/// The record sizes swept, in bytes, how the rows name them, and how many
/// times `--megabytes` a produce and a consume run move.
const SIZES: [(usize, &str, u32, u32); 4] = [
    (100, "100 B", 1, 4),
    (1024, "1 KiB", 4, 8),
    (4096, "4 KiB", 4, 8),
    (16384, "16 KiB", 4, 8),
];

/// The megabytes a produce run and a consume run of records of `size`
/// bytes move.
fn megabytes(plan: Plan, size: usize) -> (u32, u32) {
    SIZES
        .iter()
        .find(|s| s.0 == size)
        .map_or((plan.megabytes, plan.megabytes), |s| {
            (plan.megabytes * s.2, plan.megabytes * s.3)
        })
}
const PATHS: [Path; 3] = [Path::Direct, Path::Sluice, Path::Haproxy];

/// One of the swept record sizes, by its number of bytes (`--size`).
pub(crate) fn size(bytes: &str) -> Result<usize, String> {
    SIZES
        .iter()
        .map(|&(n, ..)| n)
        .find(|n| n.to_string() == bytes)
        .ok_or_else(|| {
            let sizes: Vec<String> = SIZES.iter().map(|(n, ..)| n.to_string()).collect();
            format!("--size {bytes}: the sweep's sizes are {}", sizes.join(", "))
        })
}

/// The sizes this run sweeps: all, or the one `--size` named.
fn sizes(plan: Plan) -> impl Iterator<Item = (usize, &'static str)> {
    named_sizes().filter(move |&(n, _)| plan.size.is_none_or(|s| s == n))
}

/// Every swept size, and how rows name it (the per-request section
/// measures the same sizes).
pub(crate) fn named_sizes() -> impl Iterator<Item = (usize, &'static str)> {
    SIZES.into_iter().map(|(n, name, ..)| (n, name))
}
const SECTION: &str = "record-size sweep";
const CPU: &str = "mcore/(MB/s)";

/// The machine as it is, or beside the hog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Load {
    Quiet,
    Hog,
}

impl Load {
    fn name(self) -> &'static str {
        match self {
            Load::Quiet => "quiet",
            Load::Hog => "beside a 1-core hog",
        }
    }
}

/// One case: a record size and a load.
type Case = (usize, Load);

/// Figures per (case, measure, path), one per repetition.
#[derive(Default)]
struct Results(HashMap<(Case, &'static str, Path), Vec<f64>>);

impl Results {
    fn push(&mut self, case: Case, what: &'static str, path: Path, v: f64) {
        self.0.entry((case, what, path)).or_default().push(v);
    }
    fn get(&self, case: Case, what: &'static str, path: Path) -> Vec<f64> {
        self.0.get(&(case, what, path)).cloned().unwrap_or_default()
    }
    fn run(&mut self, case: Case, kind: &'static str, path: Path, run: &Run) {
        let (cpu, broker, whole) = if kind == "produce" {
            ("produce cpu", "broker cpu, produce", "path cpu, produce")
        } else {
            ("consume cpu", "broker cpu, consume", "path cpu, consume")
        };
        self.push(case, kind, path, run.mbps);
        self.push(case, cpu, path, run.cpu_per_gb);
        self.push(case, broker, path, run.broker_cpu_per_gb);
        self.push(case, whole, path, run.path_cpu_per_gb);
    }
}

/// A topic per record size and path.
type Topics = HashMap<(usize, Path), String>;

/// Per record size: the topics the consume runs read (one per path, each
/// on its own broker, a consume run's megabytes written once now, through
/// the path), and the topics the latency runs write (one per path).
fn topics(rig: &mut Rig, plan: Plan) -> (Topics, Topics) {
    let mut filled = HashMap::new();
    let mut latency_topic = HashMap::new();
    for (size, _) in sizes(plan) {
        let s = size.to_string();
        for p in PATHS {
            let topic = rig.topic(p);
            let fill = megabytes(plan, size).1.to_string();
            load(&[
                "produce",
                rig.bootstrap(p),
                &topic,
                &fill,
                "1",
                "--size",
                &s,
            ]);
            filled.insert((size, p), topic);
        }
        for p in PATHS {
            latency_topic.insert((size, p), rig.topic(p));
        }
    }
    (filled, latency_topic)
}

/// Runs the sweep, `plan.reps` times, and emits the figures.
pub(crate) fn run(rig: &mut Rig, plan: Plan) {
    let mut r = Results::default();
    for rep in 0..plan.reps {
        if rep > 0 {
            // Every repetition on peers of its own (see the module's text).
            rig.proxy.assert_clean_logs();
            *rig = Rig::start();
        }
        eprintln!("sweep: repetition {} of {}", rep + 1, plan.reps);
        let topics = topics(rig, plan);
        warm_up(rig, plan, &topics.0);
        repetition(rig, plan, rep, &topics, &mut r);
    }
    emit(&r, plan);
}

/// The records a consume run of records of `size` bytes reads.
fn records(plan: Plan, size: usize) -> String {
    (u64::from(megabytes(plan, size).1) * 1024 * 1024 / size as u64).to_string()
}

/// One unrecorded consume run of each size on each path: the topics were
/// just written through every path, so producing is warm already.
fn warm_up(rig: &mut Rig, plan: Plan, filled: &Topics) {
    for (size, _) in sizes(plan) {
        let s = size.to_string();
        for path in PATHS {
            let args = ["consume", &records(plan, size), "--size", &s];
            throughput(rig, path, &args, &filled[&(size, path)]);
        }
    }
}

/// Every case once, the paths in an order that rotates with `rep`.
fn repetition(rig: &mut Rig, plan: Plan, rep: usize, topics: &(Topics, Topics), r: &mut Results) {
    let (filled, latency_topic) = topics;
    // A consume run reads more than a produce run writes: it is faster,
    // and its first call's records are not timed.
    let mb = |size: usize| megabytes(plan, size).0.to_string();
    let (rate, secs) = (plan.rate.to_string(), plan.latency_secs.to_string());
    let order: Vec<Path> = (0..3).map(|i| PATHS[(i + rep) % 3]).collect();
    let loads = if rep.is_multiple_of(2) {
        [Load::Quiet, Load::Hog]
    } else {
        [Load::Hog, Load::Quiet]
    };
    for (size, _) in sizes(plan) {
        let s = size.to_string();
        for l in loads {
            let case = (size, l);
            let _hog = (l == Load::Hog).then(Hog::start);
            for &path in &order {
                let run = produce(rig, path, &mb(size), &s);
                r.run(case, "produce", path, &run);
            }
            let n = records(plan, size);
            for &path in &order {
                let args = ["consume", n.as_str(), "--size", &s];
                let run = throughput(rig, path, &args, &filled[&(size, path)]);
                r.run(case, "consume", path, &run);
            }
            let topics: Vec<(Path, String)> = PATHS
                .iter()
                .map(|&p| (p, latency_topic[&(size, p)].clone()))
                .collect();
            for (path, report) in latencies(rig, &topics, &rate, &secs, &s) {
                let ms = |k: &str| report[k].as_f64().unwrap_or(f64::NAN);
                r.push(case, "p50", path, ms("p50_ms"));
                r.push(case, "p99", path, ms("p99_ms"));
            }
        }
    }
}

/// A produce run (acks=1) of records of `size` bytes into a new topic,
/// dropped after.
fn produce(rig: &mut Rig, path: Path, mb: &str, size: &str) -> Run {
    let topic = rig.topic(path);
    let out = throughput(rig, path, &["produce", mb, "1", "--size", size], &topic);
    rig.drop_topic(path, &topic);
    out
}

/// The latency clients of `topics`' paths at once (a hiccup lands on every
/// path alike), of records of `size` bytes.
pub(crate) fn latencies(
    rig: &Rig,
    topics: &[(Path, String)],
    rate: &str,
    secs: &str,
    size: &str,
) -> Vec<(Path, serde_json::Value)> {
    std::thread::scope(|scope| {
        let runs: Vec<_> = topics
            .iter()
            .map(|(path, topic)| {
                let args = [
                    "latency",
                    rig.bootstrap(*path),
                    topic.as_str(),
                    rate,
                    secs,
                    "1",
                    "--size",
                    size,
                ];
                let path = *path;
                scope.spawn(move || (path, load(&args)))
            })
            .collect();
        runs.into_iter()
            .map(|h| h.join().expect("latency client"))
            .collect()
    })
}

/// A target against haproxy: what a row must reach, in words.
type Goal = Option<(Target, &'static str)>;
const AT_LEAST: Goal = Some((Target::RatioAtLeast(1.0), ">= 1.00x haproxy"));
const AT_MOST: Goal = Some((Target::RatioAtMost(1.0), "<= 1.00x haproxy"));

/// What the sweep reports per case: the results' key, how rows name it
/// (sluice-proxy's figure), its unit, the target against haproxy
/// (p50 and the broker's and whole path's CPU have none). The path's CPU
/// is the client's, the broker's and the proxy's together.
const MEASURES: [(&str, &str, &str, Goal); 10] = [
    ("produce", "produce acks=1, sluice-proxy", "MB/s", AT_LEAST),
    ("consume", "consume, sluice-proxy", "MB/s", AT_LEAST),
    (
        "produce cpu",
        "proxy CPU per GB produced, sluice-proxy",
        CPU,
        AT_MOST,
    ),
    (
        "consume cpu",
        "proxy CPU per GB consumed, sluice-proxy",
        CPU,
        AT_MOST,
    ),
    (
        "broker cpu, produce",
        "broker CPU per GB produced, behind sluice-proxy",
        CPU,
        None,
    ),
    (
        "broker cpu, consume",
        "broker CPU per GB consumed, behind sluice-proxy",
        CPU,
        None,
    ),
    (
        "path cpu, produce",
        "path CPU per GB produced, sluice-proxy",
        CPU,
        None,
    ),
    (
        "path cpu, consume",
        "path CPU per GB consumed, sluice-proxy",
        CPU,
        None,
    ),
    ("p50", "latency p50, sluice-proxy", "ms", None),
    ("p99", "latency p99, sluice-proxy", "ms", AT_MOST),
];

fn emit(r: &Results, plan: Plan) {
    let (d, s, h) = (Path::Direct, Path::Sluice, Path::Haproxy);
    for (size, label) in sizes(plan) {
        for l in [Load::Quiet, Load::Hog] {
            let case = (size, l);
            let name = |what: &str| format!("{label} records, {}: {what}", l.name());
            for (key, what, unit, goal) in MEASURES {
                let row = Row::new(SECTION, name(what), unit, r.get(case, key, s))
                    .baseline("haproxy", r.get(case, key, h));
                match goal {
                    Some((t, words)) => row.target(t, words).emit(),
                    None => row.emit(),
                }
                if key.ends_with("cpu") {
                    continue;
                }
                Row::new(
                    SECTION,
                    name(&format!("{what} vs direct")),
                    unit,
                    r.get(case, key, s),
                )
                .baseline("direct", r.get(case, key, d))
                .emit();
                let reference = format!(
                    "{} vs direct (reference)",
                    what.replace("sluice-proxy", "haproxy")
                );
                let row = Row::new(SECTION, name(&reference), unit, r.get(case, key, h))
                    .baseline("direct", r.get(case, key, d));
                if key.starts_with('p') && key != "produce" {
                    row.note(format!(
                        "one record every {:.1} ms per path, the three paths at once, acks=1",
                        1000.0 / f64::from(plan.rate)
                    ))
                    .emit();
                } else {
                    row.emit();
                }
            }
        }
    }
    emit_pooled(r, plan);
}

/// Every case's repetitions of a measure together, paired as they ran: one
/// cell's 15 ratios resolve about +-10%, the sweep's 120 about +-3%. Its
/// median says whether sluice-proxy is ahead, level or behind across sizes
/// and loads (the figures in its own unit mix sizes; only the ratio means
/// anything). No target: the are per size.
fn emit_pooled(r: &Results, plan: Plan) {
    let cases: Vec<Case> = sizes(plan)
        .flat_map(|(size, _)| [(size, Load::Quiet), (size, Load::Hog)])
        .collect();
    let all = |key: &'static str, path: Path| -> Vec<f64> {
        cases.iter().flat_map(|&c| r.get(c, key, path)).collect()
    };
    for (key, what, unit, _) in MEASURES {
        let name = format!("all cases pooled: {what}");
        Row::new(SECTION, name, unit, all(key, Path::Sluice))
            .baseline("haproxy", all(key, Path::Haproxy))
            .note("the ratio is the median of every repetition's, all cases together")
            .emit();
    }
}
