//! The pure parts of the analysis: which changed clusters are judged (by
//! the last good version's settings), the signals of a window as the
//! difference of two cumulative snapshots, and the reason a
//! regression is recorded under.

use std::collections::BTreeMap;

use sluice_admin_api::{ClientSignals, Finding, FrontDoor};

use crate::config::ProxyConfig;
use crate::config::model::AnalysisSettings;

/// A changed cluster that is judged.
#[derive(Debug, Clone)]
pub(super) struct Judged {
    /// Its name.
    pub(super) name: String,
    /// The last good version's settings for it (what judges the change).
    pub(super) settings: AnalysisSettings,
    /// The front-door check on the last good version, if it ran.
    pub(super) before: Option<FrontDoor>,
    /// What was not fine before either, as a person reads it.
    pub(super) notes: Vec<String>,
}

/// A changed cluster that is not judged, and why.
pub(super) type Unjudged = (String, String);

/// The clusters a change from `last` (the last good version) to `new`
/// modifies (its TLS material or credentials included), in `new`'s order,
/// apart: those judged, and those whose analysis `last` switches off (or
/// all, when nothing is `observing`). An added cluster has no before to
/// compare with; a removed one has no after.
pub(super) fn judged(
    last: &ProxyConfig,
    new: &ProxyConfig,
    observing: bool,
) -> (Vec<Judged>, Vec<Unjudged>) {
    let changes = crate::config::diff(last, new);
    let changed = |name: &str| {
        changes
            .modified
            .iter()
            .chain(&changes.rotated)
            .any(|m| m.name == name)
    };
    let mut judged = Vec::new();
    let mut unjudged = Vec::new();
    for cluster in &new.virtual_clusters {
        let name = cluster.name.as_str();
        let Some(before) = last.cluster(name).filter(|_| changed(name)) else {
            continue;
        };
        let settings = before.analysis.clone();
        let off = if !observing {
            Some("nothing observes this proxy's clients (no front door or signals wired in)")
        } else if !settings.enabled {
            Some("switched off by the version before (analysis.enabled: false)")
        } else if !settings.judges() {
            Some("frontDoor and signals both switched off by the version before")
        } else {
            None
        };
        match off {
            Some(why) => unjudged.push((name.to_owned(), why.to_owned())),
            None => judged.push(Judged {
                name: name.to_owned(),
                settings,
                before: None,
                notes: Vec::new(),
            }),
        }
    }
    (judged, unjudged)
}

/// What was counted between two cumulative snapshots (`earlier` absent:
/// since the process started).
pub(super) fn between(later: &ClientSignals, earlier: Option<&ClientSignals>) -> ClientSignals {
    let zero = ClientSignals::default();
    let e = earlier.unwrap_or(&zero);
    let map = |l: &BTreeMap<String, u64>, e: &BTreeMap<String, u64>| {
        l.iter()
            .map(|(k, v)| (k.clone(), v.saturating_sub(*e.get(k).unwrap_or(&0))))
            .filter(|(_, v)| *v > 0)
            .collect()
    };
    ClientSignals {
        window_ms: later.window_ms.saturating_sub(e.window_ms),
        connections: later.connections.saturating_sub(e.connections),
        requests: later.requests.saturating_sub(e.requests),
        closed_on_error: map(&later.closed_on_error, &e.closed_on_error),
        upstream_connect_failures: later
            .upstream_connect_failures
            .saturating_sub(e.upstream_connect_failures),
        unknown_node_ids: later.unknown_node_ids.saturating_sub(e.unknown_node_ids),
        response_errors: map(&later.response_errors, &e.response_errors),
        bootstrap_only_clients: later
            .bootstrap_only_clients
            .saturating_sub(e.bootstrap_only_clients),
    }
}

/// The reason a regressed version is recorded under: the first finding,
/// and how many more there are.
pub(super) fn reason(findings: &[Finding]) -> String {
    match findings {
        [] => "a regression without findings".to_owned(),
        [first] => first.to_string(),
        [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MemoryFiles, validate};

    fn config(clusters: &[(&str, u16, &str)]) -> ProxyConfig {
        let mut text = String::from("virtualClusters:\n");
        for (name, port, extra) in clusters {
            text.push_str(&format!(
                "  - name: {name}\n    upstream: {{ bootstrapServers: [k:9092] }}\n    gateway: {{ advertisedHost: h, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n{extra}",
                port + 1
            ));
        }
        let valid = validate(text.as_bytes(), &MemoryFiles::default()).unwrap();
        (*valid.config).clone()
    }

    const OFF: &str = "    analysis: { enabled: false }\n";
    const SHORT: &str = "    analysis: { window: 1s }\n";

    #[test]
    fn the_last_good_versions_settings_decide_which_changed_clusters_are_judged() {
        let last = config(&[
            ("a", 100, ""),
            ("b", 200, OFF),
            ("c", 300, SHORT),
            ("d", 400, ""),
        ]);
        // a, b, c move; d only switches its own analysis off; e is new.
        let new = config(&[
            ("e", 500, ""),
            ("c", 310, OFF),
            ("b", 210, ""),
            ("a", 110, ""),
            ("d", 400, OFF),
        ]);
        let (judged, unjudged) = judged(&last, &new, true);
        let names: Vec<&str> = judged.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["c", "a"]);
        assert_eq!(judged[0].settings.window, std::time::Duration::from_secs(1));
        assert_eq!(
            unjudged,
            [(
                "b".to_owned(),
                "switched off by the version before (analysis.enabled: false)".to_owned()
            )]
        );
        let (judged, unjudged) = judged_off(&last, &new);
        assert!(judged.is_empty());
        assert_eq!(unjudged.len(), 3);
    }

    fn judged_off(last: &ProxyConfig, new: &ProxyConfig) -> (Vec<Judged>, Vec<Unjudged>) {
        judged(last, new, false)
    }

    #[test]
    fn a_window_is_the_difference_of_two_snapshots() {
        let mut earlier = ClientSignals {
            window_ms: 1000,
            upstream_connect_failures: 2,
            ..ClientSignals::default()
        };
        earlier.closed_on_error.insert("upstream_refused".into(), 1);
        let mut later = ClientSignals {
            window_ms: 4000,
            upstream_connect_failures: 9,
            ..ClientSignals::default()
        };
        later.closed_on_error.insert("upstream_refused".into(), 1);
        later.closed_on_error.insert("frame_timeout".into(), 3);
        let w = between(&later, Some(&earlier));
        assert_eq!(w.window_ms, 3000);
        assert_eq!(w.upstream_connect_failures, 7);
        assert_eq!(w.closed_on_error.len(), 1, "{w:?}");
        assert_eq!(w.closed_on_error["frame_timeout"], 3);
        assert_eq!(between(&later, None), later);
    }

    #[test]
    fn the_reason_is_the_first_finding_and_how_many_more() {
        let finding = |step: &str| Finding {
            cluster: "a".into(),
            step: step.into(),
            before: "ok".into(),
            after: "refused".into(),
        };
        assert_eq!(
            reason(&[finding("bootstrap")]),
            "virtual cluster a: bootstrap: before: ok; after: refused"
        );
        assert_eq!(
            reason(&[finding("bootstrap"), finding("brokers"), finding("x")]),
            "virtual cluster a: bootstrap: before: ok; after: refused (and 2 more)"
        );
    }
}
