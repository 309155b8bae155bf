//! Collects the `BENCH {json}` lines every benchmark printed into one table
//! and one JSON file, with each figure's target checked and the machine
//! described. Used by `scripts/bench`.
//!
//! `bench_report --out results.json [--load-before "1.0 0.5 0.2"] OUTPUT...`
//! Exits 1 when a benchmark printed no figure at all (a broken run), not when
//! a target is missed: missed targets are results to read.

use std::process::Command;

use serde_json::{Value, json};

fn main() {
    let mut out = None;
    let mut load_before = String::new();
    let mut inputs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = args.next(),
            "--load-before" => load_before = args.next().unwrap_or_default(),
            _ => inputs.push(a),
        }
    }
    let Some(out) = out else {
        eprintln!("usage: bench_report --out results.json [--load-before LOAD] OUTPUT...");
        std::process::exit(2);
    };
    let mut results = Vec::new();
    let mut empty = Vec::new();
    for file in &inputs {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let before = results.len();
        for line in text.lines() {
            if let Some(record) = line.strip_prefix("BENCH ")
                && let Ok(mut v) = serde_json::from_str::<Value>(record)
            {
                v["met"] = met(&v);
                results.push(v);
            }
        }
        if results.len() == before {
            empty.push(file.clone());
        }
    }
    let machine = machine(&load_before);
    print_table(&results, &machine);
    let missed: Vec<&Value> = results.iter().filter(|r| r["met"] == false).collect();
    let document = json!({
        "machine": machine,
        "results": results,
        "targets": {
            "checked": results.iter().filter(|r| r["met"].is_boolean()).count(),
            "missed": missed.iter().map(|r| r["case"].clone()).collect::<Vec<_>>(),
        },
    });
    let text = serde_json::to_string_pretty(&document).expect("serialize results");
    std::fs::write(&out, text + "\n").unwrap_or_else(|e| panic!("write {out}: {e}"));
    println!("\nwritten: {out}");
    if !empty.is_empty() {
        eprintln!("no figures from: {}", empty.join(", "));
        std::process::exit(1);
    }
}

/// Whether a figure reached its target (null when it has none or no value).
fn met(r: &Value) -> Value {
    let t = &r["target"];
    let of = match t["of"].as_str() {
        Some("ratio") => r["ratio"].as_f64(),
        Some("median") => r["median"].as_f64(),
        _ => None,
    };
    match (of, t["min"].as_f64(), t["max"].as_f64()) {
        (Some(v), Some(min), _) if v.is_finite() => json!(v >= min),
        (Some(v), _, Some(max)) if v.is_finite() => json!(v <= max),
        _ => Value::Null,
    }
}

fn num(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.is_finite() => {
            let a = x.abs();
            if a >= 100.0 {
                format!("{x:.0}")
            } else if a >= 10.0 {
                format!("{x:.1}")
            } else if a >= 1.0 {
                format!("{x:.2}")
            } else {
                format!("{x:.3}")
            }
        }
        _ => "-".to_owned(),
    }
}

fn print_table(results: &[Value], machine: &Value) {
    println!(
        "\nSluice benchmarks ({})",
        machine["summary"].as_str().unwrap_or("")
    );
    println!(
        "load average before: {}, after: {}",
        machine["load_before"], machine["load_after"]
    );
    let mut section = "";
    for r in results {
        let s = r["section"].as_str().unwrap_or("");
        if s != section {
            section = s;
            println!(
                "\n== {s}\n{:<62} {:>9} {:<13} {:>17} {:>8} {:>15}  {:<24} target",
                "case", "median", "unit", "spread", "ratio", "ratio 95% CI", "baseline (median)",
            );
        }
        let spread = format!("{} – {}", num(&r["lo"]), num(&r["hi"]));
        let (ratio, rspread, baseline) = if r["ratio"].is_null() {
            ("".to_owned(), "".to_owned(), "".to_owned())
        } else {
            (
                format!("{}x", num(&r["ratio"])),
                match &r["ratio_ci95"] {
                    Value::Array(ci) if ci.len() == 2 => {
                        format!("{} – {}", num(&ci[0]), num(&ci[1]))
                    }
                    _ => "-".to_owned(),
                },
                format!(
                    "{} ({})",
                    r["baseline"].as_str().unwrap_or(""),
                    num(&r["baseline_median"])
                ),
            )
        };
        let target = match (&r["target"]["text"], &r["met"]) {
            (Value::String(t), Value::Bool(true)) => format!("{t}: met"),
            (Value::String(t), Value::Bool(false)) => format!("{t}: MISSED"),
            (Value::String(t), _) => format!("{t}: no value"),
            _ => String::new(),
        };
        println!(
            "{:<62} {:>9} {:<13} {:>17} {:>8} {:>15}  {:<24} {}",
            r["case"].as_str().unwrap_or(""),
            num(&r["median"]),
            r["unit"].as_str().unwrap_or(""),
            spread,
            ratio,
            rspread,
            baseline,
            target
        );
    }
}

/// What the figures were measured on.
fn machine(load_before: &str) -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let mem_gib = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    let os = read("/etc/os-release")
        .lines()
        .find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_owned())
        })
        .unwrap_or_default();
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
    let run = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_owned()
            })
            .unwrap_or_default()
    };
    let venv = sluice_tests::python::interpreter();
    let librdkafka = run(
        &venv.to_string_lossy(),
        &[
            "-c",
            "import importlib.metadata as m, confluent_kafka as c; print('confluent-kafka', m.version('confluent-kafka'), 'librdkafka', c.libversion()[0])",
        ],
    );
    let dirty = !run("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
    let commit = run("git", &["rev-parse", "--short", "HEAD"])
        + if dirty {
            " (with uncommitted changes)"
        } else {
            ""
        };
    let load_after = read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    json!({
        "summary": format!("{cpu}, {cpus} CPUs, {mem_gib:.0} GiB, {os}, Linux {kernel}"),
        "cpu": cpu,
        "cpus": cpus,
        "memory_gib": (mem_gib * 10.0).round() / 10.0,
        "os": os,
        "kernel": kernel,
        "rustc": run("rustc", &["-V"]),
        "tansu": run("tansu", &["--version"]),
        "haproxy": run("haproxy", &["-v"]),
        "confluent_kafka_and_librdkafka": librdkafka,
        "commit": commit,
        "load_before": load_before,
        "load_after": load_after,
    })
}
