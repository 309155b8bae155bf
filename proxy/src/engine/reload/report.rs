//! What a reload's outcome leaves behind: its record in status, the
//! metrics and the log line; and the settings that wait for a restart.

use std::time::{Duration, SystemTime};

use sluice_admin_api::{AttemptedVersion, FailureStage};

use super::ReloadOutcome;
use crate::config::ProxyConfig;
use crate::engine::Engine;
use crate::engine::status::Touched;
use sluice_admin_api::ReloadStatus;

impl Engine {
    /// The version an attempt with `bytes` is recorded under: theirs, or,
    /// when it `failed` with the very bytes in force (only referenced files
    /// changed: a renewed certificate, say), its effective version, so the
    /// failure is never pinned on the version in force.
    pub(super) fn attempted(
        &self,
        bytes: &[u8],
        failed: bool,
        source: super::Source<'_>,
    ) -> AttemptedVersion {
        let version = crate::config::config_version(bytes);
        if failed && version == self.config().version {
            let files = match source {
                super::Source::New => &*self.files,
                super::Source::Revert(files) => files,
            };
            return crate::config::validate_referenced(bytes, files)
                .1
                .effective_version
                .into();
        }
        version.into()
    }

    /// Leaves attempt number `attempt`'s record (`requested` is its version;
    /// unknown for a SIGHUP refused before it read the file): status, the
    /// metrics and the log line.
    pub(super) fn report(
        &self,
        outcome: &ReloadOutcome,
        attempt: u64,
        at: SystemTime,
        requested: Option<&AttemptedVersion>,
        took: Duration,
    ) {
        let version = requested.cloned();
        let (result, modified, error) = summary(outcome);
        let detail = match outcome {
            ReloadOutcome::Applied {
                changes, failed, ..
            } => format!(
                "{} added, {} removed, {} modified, {} unchanged, {} failed to start",
                changes.added.len(),
                changes.removed.len(),
                changes.modified.len(),
                changes.unchanged.len(),
                failed.len()
            ),
            _ => error.clone().unwrap_or_default(),
        };
        // The status is recorded before the event is logged, so whoever sees
        // the log line finds the attempt in `/admin/config/status`. A refused
        // concurrent attempt does not overwrite the running one's record.
        if result != ReloadStatus::Conflict {
            if let (Some(stage), Some(reason), Some(version)) =
                (failure_stage(outcome), &error, &version)
            {
                self.record_failure(version.clone(), stage, reason.clone());
            }
            self.record_reload(attempt, at, result, version.clone(), took, modified, error);
        }
        let label = version.as_ref().map_or("", AttemptedVersion::as_str);
        self.events.reload(result, attempt, label, took, &detail);
    }
}

/// The status of an attempt that ended with `outcome`, the clusters it
/// touched, and why it did not apply.
fn summary(outcome: &ReloadOutcome) -> (ReloadStatus, Touched, Option<String>) {
    let none = Touched::default();
    match outcome {
        ReloadOutcome::Applied { changes, .. } => {
            let touched = Touched {
                added: changes.added.clone(),
                modified: changes.modified.iter().map(|m| m.name.clone()).collect(),
                removed: changes.removed.clone(),
            };
            (ReloadStatus::Applied, touched, None)
        }
        ReloadOutcome::Unchanged { .. } => (ReloadStatus::Unchanged, none, None),
        ReloadOutcome::Rejected { errors, .. } => (
            ReloadStatus::Rejected,
            none,
            Some(format!("configuration invalid: {} errors", errors.len())),
        ),
        ReloadOutcome::PreconditionFailed { current, effective } => (
            ReloadStatus::PreconditionFailed,
            none,
            Some(match effective {
                None => format!("If-Match does not match the version in force ({current})"),
                Some(found) => format!(
                    "If-Effective-Match does not match the referenced files as read now ({found})"
                ),
            }),
        ),
        ReloadOutcome::Failed { reason, .. } => (ReloadStatus::Failed, none, Some(reason.clone())),
        ReloadOutcome::Busy { .. } => (
            ReloadStatus::Conflict,
            none,
            Some("another reload is in progress".to_owned()),
        ),
        ReloadOutcome::ShuttingDown { .. } => (
            ReloadStatus::ShuttingDown,
            none,
            Some("the proxy is shutting down".to_owned()),
        ),
    }
}

/// Where an attempt that ended with `outcome` failed, if it did.
fn failure_stage(outcome: &ReloadOutcome) -> Option<FailureStage> {
    match outcome {
        ReloadOutcome::Rejected { .. } => Some(FailureStage::Validate),
        ReloadOutcome::Failed { upstream, .. } if !upstream.is_empty() => {
            Some(FailureStage::UpstreamCheck)
        }
        ReloadOutcome::Failed { .. } => Some(FailureStage::Reload),
        _ => None,
    }
}

/// Proxy-wide settings of `now` (in force) that the process, started with
/// `started`, cannot apply live.
pub(super) fn restart_required(started: &ProxyConfig, now: &ProxyConfig) -> Vec<String> {
    let mut out = Vec::new();
    if started.admin.listen != now.admin.listen {
        out.push(format!(
            "admin.listen changed from {} to {}: the admin API keeps listening on {} until the proxy restarts",
            started.admin.listen, now.admin.listen, started.admin.listen
        ));
    }
    match (started.admin.tls.is_some(), now.admin.tls.is_some()) {
        (false, true) => out.push(
            "admin.tls added: the admin API keeps speaking plain HTTP until the proxy restarts"
                .to_owned(),
        ),
        (true, false) => out.push(
            "admin.tls removed: the admin API keeps speaking HTTPS, with the last certificate, \
             until the proxy restarts"
                .to_owned(),
        ),
        // A renewed certificate is served to new handshakes at once.
        _ => {}
    }
    out
}
