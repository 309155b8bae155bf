//! Throughput, latency and CPU cost of the data plane: the same rdkafka
//! workload direct to the broker, through sluice-proxy and through haproxy,
//! interleaved repetition by repetition (throughput runs one path at a time,
//! in rotating order; the latency clients of the three paths at once).

use std::collections::HashMap;

use crate::rig::{Path, Rig, cpu_seconds, load, reset_peak_rss, vm_kib};
use sluice_tools::record::{Row, Target};

/// How much to measure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// Measured repetitions of every case on every path.
    pub(crate) reps: usize,
    /// Megabytes per produce run (and in the topic each consume run reads).
    pub(crate) megabytes: u32,
    /// Records per second in the latency runs.
    pub(crate) rate: u32,
    /// Seconds per latency run.
    pub(crate) latency_secs: u32,
    /// The one record size the sweep runs (`--size`), or all of them.
    pub(crate) size: Option<usize>,
}

const PATHS: [Path; 3] = [Path::Direct, Path::Sluice, Path::Haproxy];
const SECTION: &str = "data plane";
const VERSUS: &str = "pass-through vs haproxy";

/// Figures per (measure, path), one per repetition.
#[derive(Default)]
pub(crate) struct Results(HashMap<(&'static str, Path), Vec<f64>>);

impl Results {
    pub(crate) fn push(&mut self, what: &'static str, path: Path, v: f64) {
        self.0.entry((what, path)).or_default().push(v);
    }
    pub(crate) fn record(&mut self, key: &'static str, path: Path, run: &Run) {
        let [mbps, cpu, cores, peak] = match key {
            "produce1" => [
                "produce1",
                "produce1 cpu",
                "produce1 cores",
                "produce1 peak",
            ],
            "produceall" => [
                "produceall",
                "produceall cpu",
                "produceall cores",
                "produceall peak",
            ],
            _ => ["consume", "consume cpu", "consume cores", "consume peak"],
        };
        self.push(mbps, path, run.mbps);
        self.push(cpu, path, run.cpu_per_gb);
        self.push(cores, path, run.cores);
        self.push(peak, path, run.peak_rss_mib);
    }
    pub(crate) fn get(&self, what: &'static str, path: Path) -> Vec<f64> {
        self.0.get(&(what, path)).cloned().unwrap_or_default()
    }
}

/// One throughput run.
pub(crate) struct Run {
    /// Payload megabytes per second.
    pub(crate) mbps: f64,
    /// CPU seconds of the process in the middle per GB of payload.
    pub(crate) cpu_per_gb: f64,
    /// CPU seconds of the broker per GB of payload: what the path costs the
    /// peer that bounds produce throughput.
    pub(crate) broker_cpu_per_gb: f64,
    /// CPU seconds of client, broker and middle together per GB of
    /// payload: what the whole path costs the machine.
    pub(crate) path_cpu_per_gb: f64,
    /// CPUs kept busy by client, broker and middle together.
    cores: f64,
    /// The most RSS of the process in the middle during the run (MiB).
    peak_rss_mib: f64,
}

/// Runs the load client (`args`: its mode, then what follows the topic) on
/// `path` and measures it.
pub(crate) fn throughput(rig: &mut Rig, path: Path, args: &[&str], topic: &str) -> Run {
    let pids: Vec<u32> = [Some(rig.broker(path).pid()), rig.middle(path)]
        .into_iter()
        .flatten()
        .collect();
    if let Some(middle) = rig.middle(path) {
        reset_peak_rss(middle);
    }
    let before: Vec<f64> = pids.iter().map(|&p| cpu_seconds(p)).collect();
    let flags = rig.client_flags(path);
    let mut full = vec![args[0], rig.bootstrap(path), topic];
    full.extend_from_slice(&args[1..]);
    full.extend(flags.iter().map(String::as_str));
    let report = rig.load(path, &full);
    let used: Vec<f64> = pids
        .iter()
        .zip(before)
        .map(|(&p, c)| cpu_seconds(p) - c)
        .collect();
    let number = |k: &str| report[k].as_f64().unwrap_or(f64::NAN);
    let middle = if used.len() > 1 { used[1] } else { f64::NAN };
    // The proxy's CPU covers the whole run: divided by every byte it moved
    // (a consume run times all but its first batch: "moved" counts that too).
    let moved = report["moved"].as_f64().unwrap_or(number("bytes"));
    // The client's CPU covers the timed part only: per byte timed.
    let client = number("cpu") / (number("bytes") / 1e9);
    Run {
        mbps: number("mbps"),
        cpu_per_gb: middle / (moved / 1e9),
        broker_cpu_per_gb: used[0] / (moved / 1e9),
        path_cpu_per_gb: client + used.iter().sum::<f64>() / (moved / 1e9),
        cores: (number("cpu") + used.iter().sum::<f64>()) / number("seconds"),
        peak_rss_mib: rig
            .middle(path)
            .map_or(f64::NAN, |p| vm_kib(p, "VmHWM") / 1024.0),
    }
}

/// A produce run into a new topic, dropped after.
pub(crate) fn produce(rig: &mut Rig, path: Path, mb: &str, acks: &str) -> Run {
    let topic = rig.topic(path);
    let out = throughput(rig, path, &["produce", mb, acks], &topic);
    rig.drop_topic(path, &topic);
    out
}

/// Runs every case on every path, `plan.reps` times, and emits the figures.
pub(crate) fn run(rig: &mut Rig, plan: Plan) {
    let mb = plan.megabytes.to_string();
    let records = (plan.megabytes * 1024).to_string();
    let (rate, secs) = (plan.rate.to_string(), plan.latency_secs.to_string());
    // Topics read by the consume runs and written by the latency runs.
    // Each path's on its own broker.
    let filled: HashMap<Path, String> = PATHS
        .iter()
        .map(|&p| {
            let topic = rig.topic(p);
            load(&["produce", rig.bootstrap(p), &topic, &mb, "1"]);
            (p, topic)
        })
        .collect();
    let fill = |p: Path| filled[&p].clone();
    let latency_topic: HashMap<Path, String> = PATHS.iter().map(|&p| (p, rig.topic(p))).collect();

    eprintln!("warm-up: one unrecorded run of each case on each path");
    for path in PATHS {
        produce(rig, path, "32", "1");
        throughput(rig, path, &["consume", &records], &fill(path));
        load(&[
            "latency",
            rig.bootstrap(path),
            &latency_topic[&path],
            &rate,
            "2",
            "1",
        ]);
    }

    let mut r = Results::default();
    for rep in 0..plan.reps {
        eprintln!("data plane: repetition {} of {}", rep + 1, plan.reps);
        // Each path takes each position in turn.
        let order: Vec<Path> = (0..3).map(|i| PATHS[(i + rep) % 3]).collect();
        for (key, acks) in [("produce1", "1"), ("produceall", "all")] {
            for &path in &order {
                let run = produce(rig, path, &mb, acks);
                r.record(key, path, &run);
            }
        }
        for &path in &order {
            let run = throughput(rig, path, &["consume", &records], &fill(path));
            r.record("consume", path, &run);
        }
        // The three latency clients run at the same time, so a hiccup of
        // this shared machine lands on every path alike.
        let reports: Vec<(Path, serde_json::Value)> = std::thread::scope(|scope| {
            let runs: Vec<_> = PATHS
                .iter()
                .map(|&path| {
                    let args = [
                        "latency",
                        rig.bootstrap(path),
                        &latency_topic[&path],
                        &rate,
                        &secs,
                        "1",
                    ];
                    scope.spawn(move || (path, load(&args)))
                })
                .collect();
            runs.into_iter()
                .map(|h| h.join().expect("latency client"))
                .collect()
        });
        for (path, report) in reports {
            r.push("p50", path, report["p50_ms"].as_f64().unwrap_or(f64::NAN));
            r.push("p99", path, report["p99_ms"].as_f64().unwrap_or(f64::NAN));
        }
    }
    emit(&r, plan);
}

fn emit(r: &Results, plan: Plan) {
    emit_throughput(r);
    cpus(r);
    let moderate = format!("{} req/s of 1 KiB per path, acks=1", plan.rate);
    latency(r, &moderate);
    cpu_per_gb(r);
    versus(r, &moderate);
}

/// Throughput through the proxy against the direct path.
fn emit_throughput(r: &Results) {
    let (d, s) = (Path::Direct, Path::Sluice);
    for (key, name, target) in [
        ("produce1", "produce 1 KiB records, acks=1", 0.95),
        ("produceall", "produce 1 KiB records, acks=all", 0.95),
        ("consume", "consume 1 KiB records", 0.90),
    ] {
        Row::new(
            SECTION,
            format!("{name}: via sluice-proxy"),
            "MB/s",
            r.get(key, s),
        )
        .baseline("direct", r.get(key, d))
        .target(
            Target::RatioAtLeast(target),
            format!(">= {target:.2}x direct"),
        )
        .emit();
    }
}

/// The CPUs the client and the broker keep busy, with and without the proxy.
fn cpus(r: &Results) {
    let (d, s) = (Path::Direct, Path::Sluice);
    for (key, name) in [
        ("produce1 cores", "produce acks=1"),
        ("produceall cores", "produce acks=all"),
        ("consume cores", "consume"),
    ] {
        Row::new(
            SECTION,
            format!("CPUs busy, {name}: client + broker, direct"),
            "CPUs",
            r.get(key, d),
        )
        .note("of the machine's CPUs; near all of them means any extra hop costs throughput")
        .emit();
        Row::new(
            SECTION,
            format!("CPUs busy, {name}: client + broker + sluice-proxy"),
            "CPUs",
            r.get(key, s),
        )
        .baseline("direct", r.get(key, d))
        .emit();
    }
}

/// Latency at a moderate rate (`moderate` says which), and what the proxy adds.
fn latency(r: &Results, moderate: &str) {
    let (d, s) = (Path::Direct, Path::Sluice);
    for (key, q) in [("p50", "p50"), ("p99", "p99")] {
        Row::new(
            SECTION,
            format!("latency {q} at {moderate}: via sluice-proxy"),
            "ms",
            r.get(key, s),
        )
        .baseline("direct", r.get(key, d))
        .emit();
    }
    Row::new(
        SECTION,
        "added p99 latency: sluice-proxy minus direct",
        "ms",
        added(r, s),
    )
    .target(Target::AtMost(0.2), "<= 0.2 ms")
    .note(format!(
        "{moderate} on each path at once, produce-to-acknowledgement latency, paired repetitions"
    ))
    .emit();
}

/// The proxy's CPU per GB of records, against haproxy's.
fn cpu_per_gb(r: &Results) {
    let (s, h) = (Path::Sluice, Path::Haproxy);
    for (key, name) in [
        ("produce1 cpu", "produce acks=1"),
        ("produceall cpu", "produce acks=all"),
        ("consume cpu", "consume"),
    ] {
        Row::new(
            SECTION,
            format!("proxy CPU per GB, {name}: sluice-proxy"),
            "mcore/(MB/s)",
            r.get(key, s),
        )
        .baseline("haproxy", r.get(key, h))
        .target(Target::AtMost(5.0), "<= 5 millicores per MB/s")
        .note("CPU-seconds per GB of record payload = millicores per MB/s")
        .emit();
    }
}

/// sluice-proxy against haproxy, and haproxy against the direct path.
fn versus(r: &Results, moderate: &str) {
    let (d, s, h) = (Path::Direct, Path::Sluice, Path::Haproxy);
    for (key, name) in [
        ("produce1", "produce acks=1"),
        ("produceall", "produce acks=all"),
        ("consume", "consume"),
    ] {
        Row::new(
            VERSUS,
            format!("{name}: sluice-proxy vs haproxy"),
            "MB/s",
            r.get(key, s),
        )
        .baseline("haproxy", r.get(key, h))
        .target(Target::RatioAtLeast(1.0), ">= 1.00x haproxy")
        .emit();
        Row::new(
            VERSUS,
            format!("{name}: haproxy vs direct (reference)"),
            "MB/s",
            r.get(key, h),
        )
        .baseline("direct", r.get(key, d))
        .emit();
    }
    Row::new(
        "memory",
        "peak RSS during the consume benchmark: sluice-proxy",
        "MiB",
        r.get("consume peak", s),
    )
    .baseline("haproxy", r.get("consume peak", h))
    .note("VmHWM of the process in the middle, reset before each consume run")
    .emit();
    Row::new(
        VERSUS,
        format!("latency p99 at {moderate}: haproxy"),
        "ms",
        r.get("p99", h),
    )
    .baseline("direct", r.get("p99", d))
    .emit();
    Row::new(
        VERSUS,
        "added p99 latency: haproxy minus direct (reference)",
        "ms",
        added(r, h),
    )
    .emit();
}

/// p99 latency on path `p` minus the direct path's, repetition by repetition.
fn added(r: &Results, p: Path) -> Vec<f64> {
    r.get("p99", p)
        .iter()
        .zip(r.get("p99", Path::Direct))
        .map(|(a, b)| a - b)
        .collect()
}
