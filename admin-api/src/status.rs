//! `GET /admin/config/status`: the version in force and the last reload and
//! validation attempts, so that a caller (the watcher, an operator) sees what
//! the proxy runs and what last happened to it without reading its log.

use serde::{Deserialize, Serialize};

/// The answer (200).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigStatus {
    /// `sha256:<hex>` of the configuration in force: the watcher compares
    /// it with the file's to know whether there is anything to do, and sends
    /// it as the reload's `If-Match`.
    pub current_config_version: String,
    /// When it came into force (RFC 3339).
    pub applied_at: String,
    /// The last reload attempt, if any (a refused concurrent one excepted,
    /// so it never hides the reload that is running).
    pub last_reload_attempt: Option<ReloadAttempt>,
    /// The last validation attempt, if any.
    pub last_validation_attempt: Option<ValidationAttempt>,
    /// When the reload running now started (RFC 3339), if one runs.
    pub reload_in_progress_since: Option<String>,
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
    pub requested_version: String,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
    /// Clusters it added, modified or removed, when applied.
    pub clusters_modified: Vec<String>,
    /// Why it did not apply.
    pub error: Option<String>,
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
    pub requested_version: String,
    /// How many problems were found.
    pub errors: usize,
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
            r#"{"currentConfigVersion": "sha256:ab", "appliedAt": "2025-01-02T03:04:05.678Z",
                "lastReloadAttempt": null, "lastValidationAttempt": null, "reloadInProgressSince": null}"#,
        );
        assert_eq!(s.current_config_version, "sha256:ab");
    }

    #[test]
    fn roundtrips_with_attempts() {
        let s: ConfigStatus = roundtrip(
            r#"{"currentConfigVersion": "sha256:ab", "appliedAt": "2025-01-02T03:04:05.678Z",
                "lastReloadAttempt": {"timestamp": "2025-01-02T03:04:05.000Z", "status": "precondition_failed",
                    "requestedVersion": "sha256:cd", "durationMs": 3, "clustersModified": [],
                    "error": "If-Match does not match the version in force (sha256:ab)"},
                "lastValidationAttempt": {"timestamp": "2025-01-02T03:04:04.000Z", "status": "valid",
                    "requestedVersion": "sha256:cd", "errors": 0},
                "reloadInProgressSince": "2025-01-02T03:04:06.000Z"}"#,
        );
        let reload = s.last_reload_attempt.unwrap();
        assert_eq!(reload.status, ReloadStatus::PreconditionFailed);
        assert_eq!(
            s.last_validation_attempt.unwrap().status,
            ValidationStatus::Valid
        );
        let applied: ReloadAttempt = roundtrip(
            r#"{"timestamp": "t", "status": "applied", "requestedVersion": "sha256:cd",
                "durationMs": 40, "clustersModified": ["a", "b"], "error": null}"#,
        );
        assert_eq!(applied.status, ReloadStatus::Applied);
    }
}
