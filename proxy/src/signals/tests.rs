//! The rule, as a table: each row two windows of signals and the findings
//! they make; and [`since`]'s differences.

use std::collections::BTreeMap;

use super::*;

/// A window of `secs` with these judged counts: `closed_on_error:<reason>`,
/// `response_errors:<api:error>`, or a plain signal name.
fn window(secs: u64, counts: &[(&str, u64)]) -> ClientSignals {
    let mut s = ClientSignals {
        window_ms: secs * 1000,
        ..ClientSignals::default()
    };
    for (name, n) in counts {
        if let Some(reason) = name.strip_prefix("closed_on_error:") {
            s.closed_on_error.insert(reason.to_owned(), *n);
        } else if let Some(key) = name.strip_prefix("response_errors:") {
            s.response_errors.insert(key.to_owned(), *n);
        } else {
            match *name {
                "upstream_connect_failures" => s.upstream_connect_failures = *n,
                "unknown_node_ids" => s.unknown_node_ids = *n,
                "bootstrap_only_clients" => s.bootstrap_only_clients = *n,
                "requests" => s.requests = *n,
                "connections" => s.connections = *n,
                other => panic!("no signal {other}"),
            }
        }
    }
    s
}

struct Row {
    what: &'static str,
    before: ClientSignals,
    during: ClientSignals,
    thresholds: Thresholds,
    /// (step, before, after) of each finding expected.
    findings: &'static [(&'static str, &'static str, &'static str)],
}

fn row(
    what: &'static str,
    before: ClientSignals,
    during: ClientSignals,
    findings: &'static [(&'static str, &'static str, &'static str)],
) -> Row {
    Row {
        what,
        before,
        during,
        thresholds: Thresholds::default(),
        findings,
    }
}

/// The rule, as a table: rates, `min_events` and `ratio` by default, windows read.
#[test]
fn the_rule_rates() {
    check([
        row(
            "a burst of upstream failures from nothing is a regression",
            window(300, &[]),
            window(30, &[("upstream_connect_failures", 75)]),
            &[(
                "upstream_connect_failures",
                "0.0/s (0 in 300s)",
                "2.5/s (75 in 30s)",
            )],
        ),
        row(
            "fewer than min_events never count, even from 0",
            window(300, &[]),
            window(
                30,
                &[("unknown_node_ids", 4), ("closed_on_error:upstream", 4)],
            ),
            &[],
        ),
        row(
            "min_events from 0 is enough",
            window(300, &[]),
            window(30, &[("unknown_node_ids", 5)]),
            &[("unknown_node_ids", "0.0/s (0 in 300s)", "0.2/s (5 in 30s)")],
        ),
        row(
            "a steady error rate (a hairpin pod's clients) is not a regression",
            window(
                300,
                &[("bootstrap_only_clients", 60), ("closed_on_error:io", 300)],
            ),
            window(
                30,
                &[("bootstrap_only_clients", 6), ("closed_on_error:io", 30)],
            ),
            &[],
        ),
        row(
            "three times the rate before is not more than three times",
            window(
                300,
                &[("response_errors:metadata:LEADER_NOT_AVAILABLE", 100)],
            ),
            window(30, &[("response_errors:metadata:LEADER_NOT_AVAILABLE", 30)]),
            &[],
        ),
        row(
            "windows of a fraction of a second read as such",
            window(0, &[]),
            ClientSignals {
                window_ms: 2500,
                upstream_connect_failures: 5,
                ..ClientSignals::default()
            },
            &[(
                "upstream_connect_failures",
                "0.0/s (0 in 0s)",
                "2.0/s (5 in 2.5s)",
            )],
        ),
    ]);
}

/// The rule, as a table: each signal on its own; traffic and a filter's refusals are none.
#[test]
fn the_rule_signals_each_on_its_own() {
    check([
        row(
            "a burst over a steady rate is",
            window(300, &[("closed_on_error:io", 300)]),
            window(30, &[("closed_on_error:io", 100)]),
            &[(
                "closed_on_error:io",
                "1.0/s (300 in 300s)",
                "3.3/s (100 in 30s)",
            )],
        ),
        row(
            "each reason and each api:error on its own: a new one among steady ones",
            window(
                300,
                &[
                    ("closed_on_error:io", 300),
                    ("response_errors:metadata:LEADER_NOT_AVAILABLE", 100),
                ],
            ),
            window(
                30,
                &[
                    ("closed_on_error:io", 30),
                    ("closed_on_error:upstream", 9),
                    ("response_errors:metadata:LEADER_NOT_AVAILABLE", 10),
                    ("response_errors:metadata:UNKNOWN_TOPIC_OR_PARTITION", 12),
                ],
            ),
            &[
                (
                    "closed_on_error:upstream",
                    "0.0/s (0 in 300s)",
                    "0.3/s (9 in 30s)",
                ),
                (
                    "response_errors:metadata:UNKNOWN_TOPIC_OR_PARTITION",
                    "0.0/s (0 in 300s)",
                    "0.4/s (12 in 30s)",
                ),
            ],
        ),
        row(
            "a deny-apis filter's own refusals never count: requests answered by the filter are no signal",
            window(300, &[("requests", 1000)]),
            window(30, &[("requests", 5000), ("connections", 50)]),
            &[],
        ),
        row(
            "more traffic alone is no regression",
            window(300, &[("connections", 10), ("requests", 3000)]),
            window(30, &[("connections", 400), ("requests", 90_000)]),
            &[],
        ),
        row(
            "clients told the brokers that never reach one",
            window(300, &[]),
            window(30, &[("bootstrap_only_clients", 8)]),
            &[(
                "bootstrap_only_clients",
                "0.0/s (0 in 300s)",
                "0.3/s (8 in 30s)",
            )],
        ),
    ]);
}

/// The rule, as a table: what is ignored, thresholds configured.
#[test]
fn the_rule_thresholds_and_windows() {
    check([
        Row {
            what: "an ignored name ignores all its keys",
            thresholds: ignoring(&["response_errors"]),
            ..row(
                "",
                window(300, &[]),
                window(
                    30,
                    &[
                        ("response_errors:metadata:UNKNOWN_TOPIC_OR_PARTITION", 50),
                        (
                            "response_errors:find_coordinator:COORDINATOR_NOT_AVAILABLE",
                            50,
                        ),
                    ],
                ),
                &[],
            )
        },
        Row {
            what: "an ignored key ignores only itself",
            thresholds: ignoring(&["closed_on_error:io"]),
            ..row(
                "",
                window(300, &[]),
                window(
                    30,
                    &[("closed_on_error:io", 50), ("closed_on_error:tls", 50)],
                ),
                &[(
                    "closed_on_error:tls",
                    "0.0/s (0 in 300s)",
                    "1.7/s (50 in 30s)",
                )],
            )
        },
        Row {
            what: "a prefix that is not a whole name ignores nothing",
            thresholds: ignoring(&["closed_on"]),
            ..row(
                "",
                window(300, &[]),
                window(30, &[("closed_on_error:tls", 50)]),
                &[(
                    "closed_on_error:tls",
                    "0.0/s (0 in 300s)",
                    "1.7/s (50 in 30s)",
                )],
            )
        },
        Row {
            what: "thresholds are the configured ones",
            thresholds: Thresholds {
                min_events: 20,
                ratio: 10.0,
                ignore: Vec::new(),
            },
            ..row(
                "",
                window(300, &[("unknown_node_ids", 10)]),
                window(
                    30,
                    &[
                        ("unknown_node_ids", 15),
                        ("upstream_connect_failures", 19),
                        ("closed_on_error:tls", 25),
                    ],
                ),
                &[(
                    "closed_on_error:tls",
                    "0.0/s (0 in 300s)",
                    "0.8/s (25 in 30s)",
                )],
            )
        },
    ]);
}

/// Judges each row and compares its findings with those expected.
fn check<const N: usize>(rows: [Row; N]) {
    for r in rows {
        let got: Vec<(String, String, String)> =
            judge("orders", &r.before, &r.during, &r.thresholds)
                .into_iter()
                .inspect(|f| assert_eq!(f.cluster, "orders"))
                .map(|f| (f.step, f.before, f.after))
                .collect();
        let want: Vec<(String, String, String)> = r
            .findings
            .iter()
            .map(|(s, b, a)| ((*s).to_owned(), (*b).to_owned(), (*a).to_owned()))
            .collect();
        assert_eq!(got, want, "{}", r.what);
    }
}

/// The default thresholds, ignoring these signals.
fn ignoring(ignore: &[&str]) -> Thresholds {
    Thresholds {
        ignore: ignore.iter().map(|s| (*s).to_owned()).collect(),
        ..Thresholds::default()
    }
}

#[test]
fn since_is_the_difference_of_cumulative_snapshots() {
    let earlier = ClientSignals {
        window_ms: 300_000,
        connections: 10,
        requests: 1000,
        closed_on_error: BTreeMap::from([("io".to_owned(), 3)]),
        upstream_connect_failures: 1,
        unknown_node_ids: 0,
        response_errors: BTreeMap::from([("metadata:LEADER_NOT_AVAILABLE".to_owned(), 2)]),
        bootstrap_only_clients: 1,
    };
    let later = ClientSignals {
        window_ms: 330_000,
        connections: 12,
        requests: 1600,
        closed_on_error: BTreeMap::from([("io".to_owned(), 3), ("tls".to_owned(), 4)]),
        upstream_connect_failures: 9,
        unknown_node_ids: 7,
        response_errors: BTreeMap::from([
            ("metadata:LEADER_NOT_AVAILABLE".to_owned(), 5),
            ("metadata:UNKNOWN_TOPIC_OR_PARTITION".to_owned(), 1),
        ]),
        bootstrap_only_clients: 3,
    };
    let d = since(&later, &earlier);
    assert_eq!(
        d,
        ClientSignals {
            window_ms: 30_000,
            connections: 2,
            requests: 600,
            closed_on_error: BTreeMap::from([("tls".to_owned(), 4)]),
            upstream_connect_failures: 8,
            unknown_node_ids: 7,
            response_errors: BTreeMap::from([
                ("metadata:LEADER_NOT_AVAILABLE".to_owned(), 3),
                ("metadata:UNKNOWN_TOPIC_OR_PARTITION".to_owned(), 1),
            ]),
            bootstrap_only_clients: 2,
        }
    );
    // Never below 0, whatever the order.
    assert_eq!(since(&earlier, &later).upstream_connect_failures, 0);
    assert_eq!(since(&earlier, &later).window_ms, 0);
}

#[test]
fn default_thresholds_are_five_events_and_three_times() {
    let t = Thresholds::default();
    assert_eq!((t.min_events, t.ratio, t.ignore.len()), (5, 3.0, 0));
}
