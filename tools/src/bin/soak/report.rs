//! The report: what was collected and the checks' verdicts (`checks`), as
//! a JSON document and a table for the terminal.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::args::Args;
use crate::checks::{Check, FD_SLACK};
use crate::context;
use crate::excerpt;
use crate::outcome::Outcome;
use crate::plan::Kind;
use crate::run::Collected;

/// Per kind: attempted, then per outcome, then as expected.
fn by_kind(c: &Collected) -> BTreeMap<&'static str, Value> {
    let mut out = BTreeMap::new();
    for kind in Kind::ALL {
        let of: Vec<_> = c.records.iter().filter(|r| r.step.kind == kind).collect();
        let outcomes = [
            Outcome::Applied,
            Outcome::Rejected,
            Outcome::Failed,
            Outcome::TimedOut,
        ]
        .map(|o| {
            (
                o.as_str(),
                of.iter().filter(|r| r.observed.outcome == o).count(),
            )
        });
        let mut v = json!({
            "attempted": of.len(),
            "expected": kind.expect().as_str(),
            "as_expected": of.iter().filter(|r| r.as_expected()).count(),
            "max_ms": of.iter().map(|r| r.observed.took.as_millis()).max().unwrap_or(0),
        });
        for (name, n) in outcomes {
            v[name] = json!(n);
        }
        out.insert(kind.as_str(), v);
    }
    out
}

/// The JSON report.
pub(crate) fn json(c: &Collected, args: &Args, checks: &[Check]) -> Value {
    let p = &c.proxy_metrics;
    let w = &c.watcher_metrics;
    let lag_count = w.sum("sluice_watcher_propagation_lag_seconds_count", &[]);
    let lag_mean_ms = if lag_count > 0.0 {
        w.sum("sluice_watcher_propagation_lag_seconds_sum", &[]) / lag_count * 1000.0
    } else {
        0.0
    };
    let steps: Vec<Value> = c
        .records
        .iter()
        .map(|r| {
            json!({
                "step": r.step.number, "kind": r.step.kind.as_str(), "variant": r.step.variant,
                "expected": r.step.kind.expect().as_str(), "outcome": r.observed.outcome.as_str(),
                "as_expected": r.as_expected(), "ms": r.observed.took.as_millis(),
                "detail": r.observed.detail,
            })
        })
        .collect();
    json!({
        "passed": checks.iter().all(|c| c.ok),
        "checks": checks.iter().map(|c| json!({"check": c.name, "ok": c.ok, "detail": c.detail})).collect::<Vec<_>>(),
        "machine": context::machine(),
        "source": context::source(),
        "endpoints": {"tansu": c.endpoints.0, "proxy": c.endpoints.1},
        "requested": {"duration_s": args.duration.as_secs(), "reloads": args.reloads},
        "reloading_s": c.reloading.as_secs_f64(),
        "aborted": c.aborted,
        "edges": {"disturbed": c.disturbed, "sigterm": c.sigterm},
        "clients": {"unchanged": c.clients[0], "modified": c.clients[1]},
        "probes": c.probes,
        "reloads": {"total": c.records.len(), "by_kind": by_kind(c), "steps": steps},
        "failing_steps": excerpt::failing_steps(&c.records, &c.logs),
        "proxy": {
            "usage": c.tracks.first().map(|t| &t.1),
            "idle": {
                "start": c.quiescent.0, "end": c.quiescent.1, "fd_slack": FD_SLACK,
                "descriptors_start": c.descriptors[0], "descriptors_end": c.descriptors[1],
            },
            "reload_results": p.by("sluice_config_reload_total", "result", &[]),
            "drained_connections": p.by("sluice_drained_connections_total", "result", &[]),
            "drained_connections_by_cluster": p.by("sluice_drained_connections_total", "cluster", &[]),
            "generations_drained": p.sum("sluice_drain_duration_seconds_count", &[]),
            "drain_seconds_total": p.sum("sluice_drain_duration_seconds_sum", &[]),
            "connections_rejected": p.by("sluice_connections_rejected_total", "cluster", &[]),
            "closed_on_error": p.by("sluice_connections_closed_on_error_total", "reason", &[]),
            "upstream_connect_failures": p.sum("sluice_upstream_connect_failures_total", &[]),
            "generations": c.generations,
            // One series per running or draining generation is expected;
            // more are series left behind by generations that ended.
            "generation_series": p.count("sluice_generation_connections_active"),
            "failed_generations_reported": p.sum("sluice_virtual_cluster_state", &[("state", "failed")]),
            "unchanged_reconnections": c.unchanged_reconnections,
            "warnings": c.warnings[0],
        },
        "watcher": {
            "usage": c.tracks.get(1).map(|t| &t.1),
            "swaps": w.sum("sluice_watcher_swaps_total", &[]),
            "results": w.by("sluice_watcher_reloads_total", "result", &[]),
            "validation_rejections": w.sum("sluice_watcher_validation_rejections_total", &[]),
            "retries": w.sum("sluice_watcher_retries_total", &[]),
            "propagation_lag_mean_ms": lag_mean_ms,
            "warnings": c.warnings[1],
        },
    })
}

/// A JSON value as a table cell: numbers and strings bare.
fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        v => v.to_string(),
    }
}

/// Right-aligned cells after a left-aligned first column.
fn row(t: &mut String, first: &str, cells: &[String]) {
    let _ = write!(t, "{first:<24}");
    for c in cells {
        let _ = write!(t, " {c:>11}");
    }
    t.push('\n');
}

/// A titled block: one row per named value, one column per word of
/// `columns`, each `heading` or `heading=key` (`_` in a heading prints as a
/// space).
fn section<'a>(
    t: &mut String,
    title: &str,
    columns: &str,
    rows: impl IntoIterator<Item = (&'a str, &'a Value)>,
) {
    let columns: Vec<(String, &str)> = columns
        .split_whitespace()
        .map(|c| {
            let (heading, key) = c.split_once('=').unwrap_or((c, c));
            (heading.replace('_', " "), key)
        })
        .collect();
    t.push('\n');
    let headings: Vec<String> = columns.iter().map(|c| c.0.clone()).collect();
    row(t, title, &headings);
    for (name, v) in rows {
        let cells: Vec<String> = columns.iter().map(|c| cell(&v[c.1])).collect();
        row(t, name, &cells);
    }
}

/// The table printed at the end.
pub(crate) fn table(r: &Value) -> String {
    let mut t = String::new();
    let secs = r["reloading_s"].as_f64().unwrap_or(0.0);
    let total = &r["reloads"]["total"];
    let _ = writeln!(t, "\nsoak: {total} reloads in {secs:.0} s");
    let clients = ["unchanged", "modified"].map(|n| (n, &r["clients"][n]));
    let columns = "acked consumed lost duplicates errors=error_count disconnects";
    section(&mut t, "cluster (clients)", columns, clients);
    let kinds = r["reloads"]["by_kind"].as_object().into_iter().flatten();
    let tried = kinds
        .filter(|(_, k)| k["attempted"] != 0)
        .map(|(n, k)| (n.as_str(), k));
    let columns = "attempted applied rejected failed timed-out as_expected";
    section(&mut t, "reload kind", columns, tried);
    let mib = |v: &Value| format!("{:.1} MiB", v.as_f64().unwrap_or(0.0) / 1024.0);
    let usage = ["proxy", "watcher"].map(|n| {
        let u = &r[n]["usage"];
        let (s, e, m) = (&u["start"], &u["end"], &u["max"]);
        let rss = json!({"start": mib(&s["rss_kib"]), "end": mib(&e["rss_kib"]), "max": mib(&m["rss_kib"])});
        (n, json!({"rss": rss, "fds": {"start": s["fds"], "end": e["fds"], "max": m["fds"]}}))
    });
    let rss = "RSS_start=start RSS_end=end RSS_max=max";
    let rows = usage.iter().map(|(n, u)| (*n, &u["rss"]));
    section(&mut t, "process (with clients)", rss, rows);
    let fds = "FDs_start=start FDs_end=end FDs_max=max";
    section(&mut t, "", fds, usage.iter().map(|(n, u)| (*n, &u["fds"])));
    let p = &r["proxy"];
    let idle = &p["idle"];
    let _ = writeln!(
        t,
        "\nproxy FDs with no client: {} before, {} after",
        idle["start"]["fds"], idle["end"]["fds"]
    );
    let _ = writeln!(
        t,
        "drained connections: {}; generations drained: {}",
        p["drained_connections"], p["generations_drained"]
    );
    let _ = writeln!(
        t,
        "generation series in /metrics: {} for {} running generations; generations reported failed: {}",
        p["generation_series"],
        p["generations"].as_object().map_or(0, |g| g.len()),
        p["failed_generations_reported"]
    );
    for probe in r["probes"].as_array().into_iter().flatten() {
        let _ = writeln!(
            t,
            "probe {}: {} opened, {} refused",
            cell(&probe["cluster"]),
            probe["opened"],
            probe["refused"]
        );
    }
    t.push('\n');
    for c in r["checks"].as_array().into_iter().flatten() {
        let mark = if c["ok"] == true { "ok  " } else { "FAIL" };
        let _ = writeln!(t, "{mark} {}: {}", cell(&c["check"]), cell(&c["detail"]));
    }
    failing_steps(&mut t, r);
    t
}

/// The logs' lines around each step that did not end as its kind requires.
fn failing_steps(t: &mut String, r: &Value) {
    for step in r["failing_steps"].as_array().into_iter().flatten() {
        for log in ["soak", "proxy", "watcher"] {
            let _ = writeln!(t, "\nstep {}, {log}'s log:", step["step"]);
            for line in step[log].as_array().into_iter().flatten() {
                let _ = writeln!(t, "  {}", cell(line));
            }
        }
    }
}
