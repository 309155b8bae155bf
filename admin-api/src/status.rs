//! `GET /admin/config/status`: the version in force and the last reload and
//! validation attempts, so that a caller (the watcher, an operator) sees what
//! the proxy runs and what last happened to it without reading its log.

use serde::{Deserialize, Serialize};

use crate::version::{AttemptedVersion, ConfigVersion, EffectiveVersion};

/// The answer (200).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigStatus {
    /// `sha256:<hex>` of the configuration in force: the watcher compares
    /// it with the file's to know whether there is anything to do, and sends
    /// it as the reload's `If-Match`.
    pub current_config_version: ConfigVersion,
    /// `sha256:<hex>` of the configuration in force and the contents of the
    /// files it references as loaded: changes when a certificate does.
    pub effective_version: EffectiveVersion,
    /// Every file the configuration in force references, as written in it.
    #[serde(default)]
    pub files: Vec<String>,
    /// When it came into force (RFC 3339).
    pub applied_at: String,
    /// The last reload attempt, if any (a refused concurrent one excepted,
    /// so it never hides the reload that is running).
    pub last_reload_attempt: Option<ReloadAttempt>,
    /// The last validation attempt, if any.
    pub last_validation_attempt: Option<ValidationAttempt>,
    /// When the reload running now started (RFC 3339), if one runs.
    pub reload_in_progress_since: Option<String>,
    /// The step the running reload is at, if one runs: reads never wait
    /// for a reload, so this can be seen at every step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reload_in_progress_stage: Option<ReloadStage>,
    /// Whether the proxy is stopping (SIGTERM): mutating calls answer 503.
    #[serde(default)]
    pub stopping: bool,
    /// This proxy's instance name (`run --instance`: the pod name): a
    /// watcher's slot is the rank of its own instance among its peers'.
    #[serde(default)]
    pub instance: String,
    /// Whether the proxy is ready (startup done, not stopping): a canary
    /// that turns unready during its soak halts a rollout. A proxy started
    /// held is ready here (a restart never looks like a version failing);
    /// [`held`](Self::held) says it serves nothing yet, and `/admin/ready`
    /// answers 503 until it is released.
    #[serde(default)]
    pub ready: bool,
    /// How long the version in force has been in force, on this proxy's own
    /// clock (so peers need not agree on the time).
    #[serde(default)]
    pub running_for_ms: u64,
    /// The last version that failed here (rejected by validate, failed to
    /// reload, or failed its upstream check): kept beside the last attempt
    /// so that later attempts cannot hide it from the other pods' gates.
    #[serde(default)]
    pub last_failed_version: Option<FailedVersion>,
    /// Clusters whose current generation is failed, and why.
    #[serde(default)]
    pub clusters_failed: Vec<FailedCluster>,
    /// The client-side analysis of the last version applied, if one ran
    /// (see [`crate::analysis`]). A gate waits while it is `running`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<crate::analysis::Analysis>,
    /// Whether the proxy started held (`run --hold`): its data plane waits
    /// for a watcher to pick the version to serve (a reload) or to release
    /// it, so that a pod started during a halted rollout never serves the
    /// halted version.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

impl ConfigStatus {
    /// A proxy running `current` (with `effective`) and nothing else to
    /// say yet: no attempt, no failure, no instance name, not ready.
    pub fn running(current: ConfigVersion, effective: EffectiveVersion) -> Self {
        ConfigStatus {
            current_config_version: current,
            effective_version: effective,
            files: Vec::new(),
            applied_at: String::new(),
            last_reload_attempt: None,
            last_validation_attempt: None,
            reload_in_progress_since: None,
            reload_in_progress_stage: None,
            stopping: false,
            instance: String::new(),
            ready: false,
            running_for_ms: 0,
            last_failed_version: None,
            clusters_failed: Vec::new(),
            analysis: None,
            held: false,
        }
    }
}

/// The steps of a reload, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReloadStage {
    /// Reading and validating the configuration and its files.
    Validate,
    /// Connecting to the upstreams of added and changed clusters.
    UpstreamCheck,
    /// Building generations and binding new ports.
    Prepare,
    /// Routing listeners to the new generations.
    Commit,
    /// Writing the applied configuration back to its file (`--persist`).
    Persist,
}

/// A version that failed on this proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedVersion {
    /// What failed: the configuration's version, or its effective version
    /// when the bytes in force failed with renewed files.
    pub version: AttemptedVersion,
    /// Where it failed.
    pub stage: FailureStage,
    /// Why, as a person reads it.
    pub reason: String,
    /// When (RFC 3339).
    pub timestamp: String,
}

/// Where a version failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureStage {
    /// `POST /admin/config/validate` or the reload's own validation found
    /// errors.
    Validate,
    /// The reload's upstream check failed (final for that version).
    UpstreamCheck,
    /// Preparing the reload failed (a port taken, say).
    Reload,
    /// The client-side analysis found a regression after the version was
    /// applied; the proxy returned to the version before it.
    ClientCheck,
}

/// A cluster whose current generation failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedCluster {
    /// The cluster.
    pub name: String,
    /// Why it failed.
    pub error: String,
    /// When (RFC 3339).
    pub since: String,
    /// Whether it failed after the version in force came into force (a
    /// rollout's canary counts only these against the new version).
    pub since_current_version: bool,
}

/// One reload attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadAttempt {
    /// When it was received (RFC 3339).
    pub timestamp: String,
    /// How it ended.
    pub status: ReloadStatus,
    /// Version of the configuration it carried.
    #[serde(with = "crate::version::empty_as_none")]
    pub requested_version: Option<AttemptedVersion>,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
    /// Clusters it modified (drained and restarted), when applied.
    pub clusters_modified: Vec<String>,
    /// Clusters it added, when applied.
    #[serde(default)]
    pub clusters_added: Vec<String>,
    /// Clusters it removed, when applied.
    #[serde(default)]
    pub clusters_removed: Vec<String>,
    /// Why it did not apply.
    pub error: Option<String>,
    /// This proxy process's number for the attempt (from 1, shared by
    /// reloads and validations): the reload answer, the log line and the
    /// audit line of the same attempt carry it. 0 from an older proxy.
    #[serde(default, skip_serializing_if = "crate::reload::unnumbered")]
    pub attempt: u64,
}

/// How a reload attempt ended; also the `result` label of the proxy's
/// reload metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReloadStatus {
    /// A new configuration is in force.
    Applied,
    /// Nothing to do: the configuration in force was sent again.
    Unchanged,
    /// The configuration is invalid; nothing was touched.
    Rejected,
    /// Preparing failed; nothing was touched.
    Failed,
    /// Another reload was running.
    Conflict,
    /// `If-Match` named another version than the one in force.
    PreconditionFailed,
    /// The proxy was stopping (SIGTERM); nothing was touched.
    ShuttingDown,
}

impl ReloadStatus {
    /// Every status, for code that must name each one (the metrics'
    /// label values are these).
    pub const ALL: [ReloadStatus; 7] = [
        ReloadStatus::Applied,
        ReloadStatus::Unchanged,
        ReloadStatus::Rejected,
        ReloadStatus::Failed,
        ReloadStatus::Conflict,
        ReloadStatus::PreconditionFailed,
        ReloadStatus::ShuttingDown,
    ];

    /// The name on the wire, and the `result` label of the proxy's
    /// `sluice_config_reload_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReloadStatus::Applied => "applied",
            ReloadStatus::Unchanged => "unchanged",
            ReloadStatus::Rejected => "rejected",
            ReloadStatus::Failed => "failed",
            ReloadStatus::Conflict => "conflict",
            ReloadStatus::PreconditionFailed => "precondition_failed",
            ReloadStatus::ShuttingDown => "shutting_down",
        }
    }
}

/// One validation attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationAttempt {
    /// When it was received (RFC 3339).
    pub timestamp: String,
    /// Whether the configuration was valid.
    pub status: ValidationStatus,
    /// Version of the configuration it carried.
    #[serde(with = "crate::version::empty_as_none")]
    pub requested_version: Option<AttemptedVersion>,
    /// How many problems were found.
    pub errors: usize,
    /// This proxy process's number for the attempt (from 1, shared by
    /// reloads and validations): the reload answer, the log line and the
    /// audit line of the same attempt carry it. 0 from an older proxy.
    #[serde(default, skip_serializing_if = "crate::reload::unnumbered")]
    pub attempt: u64,
}

/// Whether a validated configuration was valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValidationStatus {
    /// No problem found.
    Valid,
    /// At least one problem found.
    Invalid,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roundtrip::roundtrip;

    #[test]
    fn roundtrips_before_any_attempt() {
        let s: ConfigStatus = roundtrip(
            r#"{"currentConfigVersion": "sha256:ab00000000000000000000000000000000000000000000000000000000000000", "appliedAt": "2025-01-02T03:04:05.678Z",
                "lastReloadAttempt": null, "lastValidationAttempt": null, "reloadInProgressSince": null,
                "instance": "sluice-proxy-7c9d8f6b5-x2kfp", "ready": true, "runningForMs": 1200, "stopping": false, "effectiveVersion": "sha256:ef00000000000000000000000000000000000000000000000000000000000000", "files": [],
                "lastFailedVersion": null, "clustersFailed": []}"#,
        );
        assert_eq!(
            s.current_config_version.as_str(),
            "sha256:ab00000000000000000000000000000000000000000000000000000000000000"
        );
    }

    #[test]
    fn roundtrips_with_attempts() {
        let s: ConfigStatus = roundtrip(
            r#"{"currentConfigVersion": "sha256:ab00000000000000000000000000000000000000000000000000000000000000", "appliedAt": "2025-01-02T03:04:05.678Z",
                "lastReloadAttempt": {"timestamp": "2025-01-02T03:04:05.000Z", "status": "precondition_failed",
                    "requestedVersion": "sha256:cd00000000000000000000000000000000000000000000000000000000000000", "durationMs": 3, "clustersModified": [], "clustersAdded": [], "clustersRemoved": [],
                    "error": "If-Match does not match the version in force (sha256:ab00000000000000000000000000000000000000000000000000000000000000)"},
                "lastValidationAttempt": {"timestamp": "2025-01-02T03:04:04.000Z", "status": "valid",
                    "requestedVersion": "sha256:cd00000000000000000000000000000000000000000000000000000000000000", "errors": 0},
                "reloadInProgressSince": "2025-01-02T03:04:06.000Z",
                "instance": "a", "ready": false, "runningForMs": 0, "stopping": true, "effectiveVersion": "sha256:ef00000000000000000000000000000000000000000000000000000000000000", "files": ["certs/server.crt"], "reloadInProgressStage": "upstream-check",
                "lastFailedVersion": {"version": "sha256:cd00000000000000000000000000000000000000000000000000000000000000", "stage": "upstream_check",
                    "reason": "virtual cluster orders: upstream check failed: k:9092: connection refused",
                    "timestamp": "2025-01-02T03:04:05.000Z"},
                "clustersFailed": [{"name": "orders", "error": "bind: address in use",
                    "since": "2025-01-02T03:04:05.000Z", "sinceCurrentVersion": true}]}"#,
        );
        let reload = s.last_reload_attempt.unwrap();
        assert_eq!(reload.status, ReloadStatus::PreconditionFailed);
        assert_eq!(
            s.last_validation_attempt.unwrap().status,
            ValidationStatus::Valid
        );
        let applied: ReloadAttempt = roundtrip(
            r#"{"timestamp": "t", "status": "applied", "requestedVersion": "sha256:cd00000000000000000000000000000000000000000000000000000000000000",
                "durationMs": 40, "clustersModified": ["a"], "clustersAdded": ["b"], "clustersRemoved": [],
                "error": null}"#,
        );
        assert_eq!(applied.status, ReloadStatus::Applied);
    }
}
