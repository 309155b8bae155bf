//! Every metric family the proxy, the watcher and the webhook export
//! follows Prometheus's naming conventions
//! (<https://prometheus.io/docs/practices/naming/>), by this module's check
//! and by `promtool check metrics`.

use sluice_tests::prometheus::{output, promtool_check_metrics};
use sluice_tests::promql::{Family, families};

use super::names::scrape_every_program;

/// What breaks the conventions (<https://prometheus.io/docs/practices/naming/>)
/// in one family's name.
fn convention_problems(name: &str, family: &Family) -> Vec<String> {
    let mut problems = Vec::new();
    let words: Vec<&str> = name.split('_').collect();
    let mut say = |p: &str| problems.push(format!("{name}: {p}"));
    if !name.starts_with("sluice_")
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        say("not sluice_ and snake_case");
    }
    if family.help.trim().is_empty() {
        say("no help");
    }
    if family.kind == "counter" && name.ends_with("_total") {
        say("a counter's family name ends in _total (its samples get it)");
    }
    let non_base = [
        "milliseconds",
        "ms",
        "microseconds",
        "nanoseconds",
        "minutes",
        "hours",
        "days",
        "kilobytes",
        "megabytes",
        "kib",
        "mib",
        "kb",
        "mb",
        "percent",
    ];
    if words.iter().any(|w| non_base.contains(w)) {
        say("not a base unit (seconds, bytes, ratios)");
    }
    let timed = [
        "duration",
        "lag",
        "latency",
        "timestamp",
        "age",
        "uptime",
        "time",
    ];
    if words.iter().any(|w| timed.contains(w)) && !name.ends_with("_seconds") {
        say("a time without _seconds at the end");
    }
    if words.contains(&"bytes") && !name.ends_with("_bytes") {
        say("bytes, but not as the unit suffix");
    }
    if family.kind == "histogram" && !(name.ends_with("_seconds") || name.ends_with("_bytes")) {
        say("a histogram without its unit");
    }
    if name.ends_with("_info") && family.kind != "gauge" && family.kind != "info" {
        say("an _info that is not a gauge");
    }
    problems
}

#[test]
fn every_exported_name_follows_the_prometheus_conventions() {
    let texts = scrape_every_program();
    let all: Vec<(String, Family)> = texts.iter().flat_map(|t| families(t)).collect();
    assert!(all.len() > 30, "{all:?}");
    let problems: Vec<String> = all
        .iter()
        .flat_map(|(name, family)| convention_problems(name, family))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    // promtool's own linter agrees.
    for text in &texts {
        let linted = promtool_check_metrics(text);
        assert!(linted.status.success(), "{}", output(&linted));
    }
}

#[test]
fn the_convention_check_refuses_what_it_should() {
    let f = |kind: &str| Family {
        kind: kind.to_owned(),
        help: "h".to_owned(),
    };
    for (name, kind) in [
        ("sluice_buffered_bytes_limit", "gauge"),
        ("sluice_reload_ms", "histogram"),
        ("sluice_drain_duration", "histogram"),
        ("sluice_requests_total", "counter"),
        ("sluice_Requests", "counter"),
    ] {
        assert!(!convention_problems(name, &f(kind)).is_empty(), "{name}");
    }
    assert!(convention_problems("sluice_max_buffered_bytes", &f("gauge")).is_empty());
    // And so does promtool's linter, on an exposition as the programs write it.
    let good = "# HELP sluice_lag_seconds A.\n# TYPE sluice_lag_seconds gauge\nsluice_lag_seconds 1\n\
                # HELP sluice_swaps S.\n# TYPE sluice_swaps counter\nsluice_swaps_total 1\n# EOF\n";
    assert!(promtool_check_metrics(good).status.success());
    let bad = good.replace("sluice_lag_seconds", "sluice_lag_ms");
    let linted = promtool_check_metrics(&bad);
    assert!(!linted.status.success());
    assert!(
        output(&linted).contains("abbreviated units"),
        "{}",
        output(&linted)
    );
}
