//! The rule that judges a version by its clients: each signal separately
//! (each close reason, each `api:error`), a signal regresses when, in the
//! window during the change, it counted at least `min_events` events and
//! its rate per second is more than `ratio` times its rate before (any
//! rate is more than a rate of 0). Pure: the windows are differences of
//! cumulative snapshots ([`since`]).

use std::collections::BTreeMap;

use sluice_admin_api::analysis::{ClientSignals, Finding};

/// How much worse a signal must get to be a finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// Fewer events of a signal in the window never count.
    pub min_events: u64,
    /// A signal regresses when its rate in the window is more than `ratio`
    /// times its rate before.
    pub ratio: f64,
    /// Signals never judged: a name (`response_errors`, `closed_on_error`)
    /// ignores all of its keys; a key (`closed_on_error:io`,
    /// `response_errors:metadata:UNKNOWN_TOPIC_OR_PARTITION`) just that one.
    pub ignore: Vec<String>,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            min_events: 5,
            ratio: 3.0,
            ignore: Vec::new(),
        }
    }
}

/// What happened between two cumulative snapshots of one cluster: each
/// count of `later` less that of `earlier` (never below 0), over the time
/// between them.
pub fn since(later: &ClientSignals, earlier: &ClientSignals) -> ClientSignals {
    fn keyed(
        later: &BTreeMap<String, u64>,
        earlier: &BTreeMap<String, u64>,
    ) -> BTreeMap<String, u64> {
        later
            .iter()
            .map(|(k, n)| {
                (
                    k.clone(),
                    n.saturating_sub(earlier.get(k).copied().unwrap_or(0)),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }
    ClientSignals {
        window_ms: later.window_ms.saturating_sub(earlier.window_ms),
        connections: later.connections.saturating_sub(earlier.connections),
        requests: later.requests.saturating_sub(earlier.requests),
        closed_on_error: keyed(&later.closed_on_error, &earlier.closed_on_error),
        upstream_connect_failures: later
            .upstream_connect_failures
            .saturating_sub(earlier.upstream_connect_failures),
        unknown_node_ids: later
            .unknown_node_ids
            .saturating_sub(earlier.unknown_node_ids),
        response_errors: keyed(&later.response_errors, &earlier.response_errors),
        bootstrap_only_clients: later
            .bootstrap_only_clients
            .saturating_sub(earlier.bootstrap_only_clients),
    }
}

/// The signals of `cluster` that got worse from the window `before` to the
/// window `during` (each a [`since`] difference), in a fixed order.
pub fn judge(
    cluster: &str,
    before: &ClientSignals,
    during: &ClientSignals,
    t: &Thresholds,
) -> Vec<Finding> {
    let earlier = judged(before);
    judged(during)
        .into_iter()
        .filter(|(signal, _)| !ignored(signal, &t.ignore))
        .filter_map(|(signal, n)| {
            let was = earlier.get(&signal).copied().unwrap_or(0);
            let rate_before = rate(was, before.window_ms);
            let rate_during = rate(n, during.window_ms);
            let worse = n > 0
                && n >= t.min_events
                && (rate_before == 0.0 || rate_during > t.ratio * rate_before);
            worse.then(|| Finding {
                cluster: cluster.to_owned(),
                step: signal,
                before: read(was, before.window_ms),
                after: read(n, during.window_ms),
            })
        })
        .collect()
}

/// Every judged signal of a window with its count, by name.
fn judged(s: &ClientSignals) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (reason, n) in &s.closed_on_error {
        out.insert(format!("closed_on_error:{reason}"), *n);
    }
    for (key, n) in &s.response_errors {
        out.insert(format!("response_errors:{key}"), *n);
    }
    out.insert(
        "upstream_connect_failures".to_owned(),
        s.upstream_connect_failures,
    );
    out.insert("unknown_node_ids".to_owned(), s.unknown_node_ids);
    out.insert(
        "bootstrap_only_clients".to_owned(),
        s.bootstrap_only_clients,
    );
    out
}

/// Whether `signal` is ignored: named whole, or a key of a name ignored.
fn ignored(signal: &str, ignore: &[String]) -> bool {
    ignore.iter().any(|i| {
        signal == i
            || signal
                .strip_prefix(i.as_str())
                .is_some_and(|rest| rest.starts_with(':'))
    })
}

/// Events per second over a window (a window of 0 ms counts as 1 ms).
fn rate(n: u64, window_ms: u64) -> f64 {
    n as f64 * 1000.0 / window_ms.max(1) as f64
}

/// `2.5/s (75 in 30s)`.
fn read(n: u64, window_ms: u64) -> String {
    let secs = if window_ms.is_multiple_of(1000) {
        format!("{}", window_ms / 1000)
    } else {
        format!("{:.1}", window_ms as f64 / 1000.0)
    };
    format!("{:.1}/s ({n} in {secs}s)", rate(n, window_ms))
}
