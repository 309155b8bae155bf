//! How long validation takes for 10, 100 and 1,000 virtual clusters, as a
//! ratio to parsing the same text with serde_yaml (a baseline measured in the
//! same run, because these machines are noisy), plus the whole
//! `sluice-proxy check` process on the 1,000-cluster file against
//! `sluice-proxy --version` (process start-up alone).
//!
//! Run: `cargo bench -p sluice-proxy --bench validate` (or `scripts/bench`,
//! which gathers the `BENCH` lines into its table).

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use sluice_proxy::config::{MemoryFiles, validate, yaml};

const WARMUP: usize = 3;
const RUNS: usize = 25;

fn config(clusters: usize) -> String {
    let mut out = String::from("drainTimeout: 30s\nvirtualClusters:\n");
    for i in 0..clusters {
        let port = 10_000 + i * 20;
        out.push_str(&format!(
            "  - name: cluster-{i}\n    upstream:\n      bootstrapServers: [kafka-0.kafka-{i}.svc:9092, kafka-1.kafka-{i}.svc:9092]\n    gateway:\n      listenHost: 0.0.0.0\n      advertisedHost: cluster-{i}.proxy.svc\n      bootstrapPort: {port}\n      brokerPorts: {{ start: {}, count: 8 }}\n    limits: {{ maxConnections: 1000 }}\n    filters:\n      - type: deny-apis\n        config: {{ apis: [DeleteTopics, DeleteRecords] }}\n",
            port + 1
        ));
    }
    out
}

/// Median and the 10th-90th percentile spread of `RUNS` timed calls.
fn measure(mut f: impl FnMut()) -> (Duration, Duration, Duration) {
    for _ in 0..WARMUP {
        f();
    }
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    (times[RUNS / 2], times[RUNS / 10], times[RUNS * 9 / 10])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Prints a figure, and the same as a `BENCH` line for `scripts/bench`.
fn row(
    name: &str,
    (median, lo, hi): (Duration, Duration, Duration),
    baseline: (&str, Duration),
    target_ms: Option<f64>,
) {
    let ratio = median.as_secs_f64() / baseline.1.as_secs_f64();
    println!(
        "{name:<44} {:>9.3} ms  [{:>8.3} – {:>8.3}]  {ratio:>6.2}x {} ({:.3} ms)",
        ms(median),
        ms(lo),
        ms(hi),
        baseline.0,
        ms(baseline.1),
    );
    let mut record = serde_json::json!({
        "section": "validate", "case": name, "unit": "ms", "spread": "p10-p90", "n": RUNS,
        "median": ms(median), "lo": ms(lo), "hi": ms(hi),
        "baseline": baseline.0, "baseline_median": ms(baseline.1), "ratio": ratio,
    });
    if let Some(max) = target_ms {
        record["target"] =
            serde_json::json!({"of": "median", "max": max, "text": format!("<= {max} ms")});
    }
    println!("BENCH {record}");
}

fn main() {
    let files = MemoryFiles::default();
    println!(
        "{:<44} {:>12}  {:>21}  {:>7} baseline",
        "case", "median", "p10 – p90", "ratio"
    );
    for clusters in [10, 100, 1000] {
        let text = config(clusters);
        assert!(validate(text.as_bytes(), &files).is_ok());
        let baseline = measure(|| {
            black_box(serde_yaml::from_str::<serde_yaml::Value>(black_box(&text)).ok());
        });
        let parse = ("serde_yaml parse", baseline.0);
        let tree = measure(|| {
            black_box(yaml::parse(black_box(&text)).ok());
        });
        row(
            &format!("positioned YAML tree, {clusters} clusters"),
            tree,
            parse,
            None,
        );
        let full = measure(|| {
            black_box(validate(black_box(text.as_bytes()), &files).is_ok());
        });
        let target = (clusters == 1000).then_some(50.0);
        row(
            &format!("validate, {clusters} clusters"),
            full,
            parse,
            target,
        );
    }

    let dir = std::env::temp_dir().join(format!("sluice-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("1000.yaml");
    std::fs::write(&file, config(1000)).expect("write config");
    let bin = env!("CARGO_BIN_EXE_sluice-proxy");
    let run = |args: &[&std::ffi::OsStr]| {
        let status = Command::new(bin)
            .args(args)
            .output()
            .expect("run sluice-proxy")
            .status;
        assert!(status.success());
    };
    let startup = measure(|| run(&["--version".as_ref()]));
    let check = measure(|| run(&["check".as_ref(), file.as_os_str()]));
    row(
        "process: sluice-proxy check, 1000 clusters",
        check,
        ("process: sluice-proxy --version", startup.0),
        None,
    );
    let _ = std::fs::remove_dir_all(&dir);
}
