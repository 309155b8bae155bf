//! The engine's outcomes as the admin API's answers: the one place where the
//! engine's outcomes become the answers of `sluice-admin-api` (problems and
//! changes are that crate's types already).

use axum::http::StatusCode;
use sluice_admin_api::{FailedCluster, ReloadAnswer, ReloadApplied, ValidateAnswer};

use crate::engine::{ReloadOutcome, ValidateOutcome, rfc3339};

/// An answer's status code for axum.
pub(super) fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// `POST /admin/config/validate`'s answer.
pub(super) fn validate(outcome: ValidateOutcome) -> ValidateAnswer {
    match outcome {
        ValidateOutcome::Valid {
            version,
            changes,
            referenced,
        } => ValidateAnswer::valid(
            version,
            changes,
            referenced.files,
            referenced.effective_version,
        ),
        ValidateOutcome::Invalid {
            version,
            errors,
            referenced,
        } => ValidateAnswer::invalid(
            version,
            errors,
            referenced.files,
            referenced.effective_version,
        ),
    }
}

/// `POST /admin/config/reload`'s answer.
pub(super) fn reload(outcome: ReloadOutcome) -> ReloadAnswer {
    match outcome {
        ReloadOutcome::Applied {
            version,
            changes,
            duration,
            restart_required,
            failed,
        } => ReloadAnswer::Applied(ReloadApplied {
            success: true,
            changed: !changes.is_empty(),
            config_version: version,
            clusters_added: changes.added,
            clusters_removed: changes.removed,
            clusters_modified: changes.modified,
            clusters_rotated: changes.rotated,
            clusters_unchanged: changes.unchanged,
            duration_ms: duration.as_secs_f64() * 1e3,
            restart_required,
            clusters_failed: failed_clusters(failed),
            attempt: 0,
        }),
        ReloadOutcome::Unchanged {
            version,
            unchanged,
            restart_required,
        } => ReloadAnswer::Applied(ReloadApplied {
            success: true,
            changed: false,
            config_version: version,
            clusters_added: Vec::new(),
            clusters_removed: Vec::new(),
            clusters_modified: Vec::new(),
            clusters_rotated: Vec::new(),
            clusters_unchanged: unchanged,
            duration_ms: 0.0,
            restart_required,
            clusters_failed: Vec::new(),
            attempt: 0,
        }),
        ReloadOutcome::Rejected { version, errors } => ReloadAnswer::rejected(version, errors),
        ReloadOutcome::PreconditionFailed {
            current,
            effective: None,
        } => ReloadAnswer::precondition_failed(current),
        ReloadOutcome::PreconditionFailed {
            current,
            effective: Some(found),
        } => ReloadAnswer::effective_precondition_failed(current, &found),
        ReloadOutcome::Failed {
            reason,
            current,
            upstream,
        } => ReloadAnswer::failed(reason, current, upstream),
        ReloadOutcome::Busy { since } => ReloadAnswer::busy(rfc3339(since)),
        ReloadOutcome::ShuttingDown { current } => ReloadAnswer::shutting_down(current),
    }
}

/// Clusters that failed to start in the reload that answers now.
fn failed_clusters(failed: Vec<(String, String)>) -> Vec<FailedCluster> {
    let now = rfc3339(std::time::SystemTime::now());
    failed
        .into_iter()
        .map(|(name, error)| FailedCluster {
            name,
            error,
            since: now.clone(),
            since_current_version: true,
        })
        .collect()
}
