//! What `GET /admin/config/status` reports: the version in force and the
//! last reload and validation attempts.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::{Engine, rfc3339};

/// The last reload and validation attempts.
#[derive(Debug, Clone, Default)]
pub(super) struct Attempts {
    pub(super) reload: Option<ReloadAttempt>,
    pub(super) validation: Option<ValidationAttempt>,
}

/// One reload attempt.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadAttempt {
    /// When it was received (RFC 3339).
    pub timestamp: String,
    /// `applied`, `unchanged`, `rejected`, `failed`, `conflict` or `precondition_failed`.
    pub status: &'static str,
    /// Version of the configuration it carried.
    pub requested_version: String,
    /// How long it took.
    pub duration_ms: u64,
    /// Clusters it modified (and added or removed), when applied.
    pub clusters_modified: Vec<String>,
    /// Why it did not apply.
    pub error: Option<String>,
}

/// One validation attempt (`POST /admin/config/validate`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationAttempt {
    /// When it was received (RFC 3339).
    pub timestamp: String,
    /// `valid` or `invalid`.
    pub status: &'static str,
    /// Version of the configuration it carried.
    pub requested_version: String,
    /// How many errors were found.
    pub errors: usize,
}

/// The body of `GET /admin/config/status`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigStatus {
    /// Version in force.
    pub current_config_version: String,
    /// When it came into force.
    pub applied_at: String,
    /// The last reload attempt, if any.
    pub last_reload_attempt: Option<ReloadAttempt>,
    /// The last validation attempt, if any.
    pub last_validation_attempt: Option<ValidationAttempt>,
    /// When the reload running now started, if one runs.
    pub reload_in_progress_since: Option<String>,
}

impl Engine {
    /// The status report.
    pub fn status(&self) -> ConfigStatus {
        let (version, applied_at) = {
            let inner = self.lock();
            (inner.config.version.to_string(), inner.applied_at)
        };
        let attempts = self.attempts().clone();
        let since = *self
            .reloading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ConfigStatus {
            current_config_version: version,
            applied_at: rfc3339(applied_at),
            last_reload_attempt: attempts.reload,
            last_validation_attempt: attempts.validation,
            reload_in_progress_since: since.map(rfc3339),
        }
    }

    fn attempts(&self) -> std::sync::MutexGuard<'_, Attempts> {
        self.status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn record_reload(
        &self,
        at: SystemTime,
        status: &'static str,
        requested_version: String,
        took: Duration,
        clusters_modified: Vec<String>,
        error: Option<String>,
    ) {
        self.attempts().reload = Some(ReloadAttempt {
            timestamp: rfc3339(at),
            status,
            requested_version,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            clusters_modified,
            error,
        });
    }

    /// Records a validation attempt.
    pub fn record_validation(&self, requested_version: String, errors: usize) {
        self.attempts().validation = Some(ValidationAttempt {
            timestamp: rfc3339(SystemTime::now()),
            status: if errors == 0 { "valid" } else { "invalid" },
            requested_version,
            errors,
        });
    }
}
