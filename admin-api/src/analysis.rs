//! The client-side analysis of a version (`analysis` in
//! [`ConfigStatus`](crate::ConfigStatus)): after a reload applies a version,
//! the proxy judges it by what its clients see, for each changed virtual
//! cluster, against the version in force before it:
//!
//! - the **front-door check** ([`FrontDoor`]): the steps a client takes
//!   through the addresses as advertised (bootstrap, ApiVersions, Metadata,
//!   then every advertised broker), run on the version before (the baseline)
//!   and on the new one;
//! - the **client signals** ([`ClientSignals`]): what the proxy counts of its
//!   clients, in the window before the change and during the analysis window.
//!
//! A step or signal that was fine before and is not now is a [`Finding`]: the
//! proxy returns to the version before (configuration and the files it held)
//! and records the new one as failed (`FailureStage::ClientCheck`), which
//! halts a fleet rollout. A step that never worked is reported, never a
//! finding (an advertised name behind a load balancer that the pod cannot
//! reach itself).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::version::{AttemptedVersion, ConfigVersion};

/// The analysis of the last version applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Analysis {
    /// The version judged.
    pub version: AttemptedVersion,
    /// The version in force before it (what a regression returns to).
    pub previous: ConfigVersion,
    /// Where it stands.
    pub verdict: Verdict,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// How long the signals are watched, in milliseconds.
    pub window_ms: u64,
    /// One entry per changed virtual cluster.
    #[serde(default)]
    pub clusters: Vec<ClusterAnalysis>,
    /// Whether the proxy returned to `previous` because of a finding.
    #[serde(default)]
    pub reverted: bool,
}

/// Where an analysis stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Checks or the signal window are still running.
    Running,
    /// Nothing got worse.
    Passed,
    /// Something got worse: see the findings.
    Regressed,
    /// No analysis (switched off, or no cluster changed).
    Off,
}

impl Verdict {
    /// Every verdict, for code that must name each one (metric labels).
    pub const ALL: [Verdict; 4] = [
        Verdict::Running,
        Verdict::Passed,
        Verdict::Regressed,
        Verdict::Off,
    ];

    /// The name on the wire and the `verdict` label of the metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Running => "running",
            Verdict::Passed => "passed",
            Verdict::Regressed => "regressed",
            Verdict::Off => "off",
        }
    }
}

/// The analysis of one virtual cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAnalysis {
    /// The virtual cluster.
    pub cluster: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// The front-door check on the version before, if it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub front_door_before: Option<FrontDoor>,
    /// The front-door check on the version judged, if it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub front_door_after: Option<FrontDoor>,
    /// What got worse.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// What was not fine before either (never a reason to return), as a
    /// person reads it.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One thing that was fine before the change and is not after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The virtual cluster.
    pub cluster: String,
    /// The front-door step (`bootstrap`, `metadata`, `brokers`) or the
    /// signal (`closed_on_error`, `upstream_connect_failures`, …).
    pub step: String,
    /// How it was before, as a person reads it.
    pub before: String,
    /// How it is now.
    pub after: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "virtual cluster {}: {}: before: {}; after: {}",
            self.cluster, self.step, self.before, self.after
        )
    }
}

/// The front-door check of one virtual cluster: the steps a client takes,
/// in order; a step after a failed one does not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontDoor {
    /// The steps that ran.
    pub steps: Vec<DoorStep>,
}

/// One step of the front-door check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoorStep {
    /// `bootstrap` (connect, TLS as a client verifies it, ApiVersions),
    /// `metadata`, or `brokers` (connect, TLS and ApiVersions to every
    /// broker address the Metadata advertises).
    pub step: String,
    /// The address(es) it used, as advertised.
    pub address: String,
    /// Whether it worked.
    pub ok: bool,
    /// Why not, as a person reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For `metadata`: the brokers it advertised, `node <id> at
    /// <host>:<port>`, by node id (a broker advertised before and missing
    /// after is a finding: a node id the gateway maps to no port).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advertised: Vec<String>,
}

/// What the proxy counted of one virtual cluster's clients over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientSignals {
    /// The window's length, in milliseconds.
    pub window_ms: u64,
    /// Client connections accepted.
    pub connections: u64,
    /// Client requests forwarded.
    pub requests: u64,
    /// Client connections closed on an error, by reason.
    #[serde(default)]
    pub closed_on_error: BTreeMap<String, u64>,
    /// Failed connections to the upstream brokers.
    pub upstream_connect_failures: u64,
    /// Broker ports or responses naming a node id the gateway maps to no
    /// port.
    pub unknown_node_ids: u64,
    /// Error codes in the responses the proxy parses, by `api:error`
    /// (`metadata:UNKNOWN_TOPIC_OR_PARTITION`), filters' own answers
    /// excepted.
    #[serde(default)]
    pub response_errors: BTreeMap<String, u64>,
    /// Clients that were answered Metadata on the bootstrap port and never
    /// reached a broker port afterwards.
    pub bootstrap_only_clients: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roundtrip::roundtrip;

    #[test]
    fn roundtrips_a_regressed_analysis() {
        let a: Analysis = roundtrip(
            r#"{"version": "sha256:cd00000000000000000000000000000000000000000000000000000000000000",
                "previous": "sha256:ab00000000000000000000000000000000000000000000000000000000000000",
                "verdict": "regressed", "startedAt": "2026-01-02T03:04:05.000Z", "windowMs": 30000,
                "reverted": true,
                "clusters": [{"cluster": "orders", "verdict": "regressed",
                  "frontDoorBefore": {"steps": [{"step": "bootstrap", "address": "p:9092", "ok": true}]},
                  "frontDoorAfter": {"steps": [{"step": "bootstrap", "address": "q:9092", "ok": false, "error": "connection refused"}]},
                  "findings": [{"cluster": "orders", "step": "bootstrap", "before": "p:9092 worked", "after": "q:9092: connection refused"}],
                  "notes": []}]}"#,
        );
        assert_eq!(a.verdict, Verdict::Regressed);
        assert_eq!(
            a.clusters[0].findings[0].to_string(),
            "virtual cluster orders: bootstrap: before: p:9092 worked; after: q:9092: connection refused"
        );
    }

    #[test]
    fn roundtrips_signals() {
        let s: ClientSignals = roundtrip(
            r#"{"windowMs": 30000, "connections": 4, "requests": 100,
                "closedOnError": {"upstream_refused": 2}, "upstreamConnectFailures": 2,
                "unknownNodeIds": 0, "responseErrors": {"metadata:LEADER_NOT_AVAILABLE": 1},
                "bootstrapOnlyClients": 1}"#,
        );
        assert_eq!(s.closed_on_error["upstream_refused"], 2);
    }
}
