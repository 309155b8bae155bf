//! The engine's outcomes as the admin API's answers: the one place where the
//! proxy's domain types (`sluice-config`'s errors and diff, the engine's
//! outcomes) become the wire types of `sluice-admin-api`.

use axum::http::StatusCode;
use sluice_admin_api::{
    Changes, ConfigProblem, FailedCluster, ModifiedCluster, ReloadAnswer, ReloadApplied,
    ValidateAnswer,
};

use crate::config::{ConfigDiff, ConfigError, diff::Modified};
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
        } => ValidateAnswer::valid(version.to_string(), wire_changes(changes))
            .referencing(referenced.files, referenced.effective_version),
        ValidateOutcome::Invalid {
            version,
            errors,
            referenced,
        } => ValidateAnswer::invalid(version.to_string(), problems(errors))
            .referencing(referenced.files, referenced.effective_version),
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
            config_version: version.to_string(),
            clusters_added: changes.added,
            clusters_removed: changes.removed,
            clusters_modified: changes.modified.into_iter().map(modified).collect(),
            clusters_rotated: changes.rotated.into_iter().map(modified).collect(),
            clusters_unchanged: changes.unchanged,
            duration_ms: duration.as_secs_f64() * 1e3,
            restart_required,
            clusters_failed: failed_clusters(failed),
        }),
        ReloadOutcome::Unchanged {
            version,
            unchanged,
            restart_required,
        } => ReloadAnswer::Applied(ReloadApplied {
            success: true,
            changed: false,
            config_version: version.to_string(),
            clusters_added: Vec::new(),
            clusters_removed: Vec::new(),
            clusters_modified: Vec::new(),
            clusters_rotated: Vec::new(),
            clusters_unchanged: unchanged,
            duration_ms: 0.0,
            restart_required,
            clusters_failed: Vec::new(),
        }),
        ReloadOutcome::Rejected { version, errors } => {
            ReloadAnswer::rejected(version.to_string(), problems(errors))
        }
        ReloadOutcome::PreconditionFailed {
            current,
            effective: None,
        } => ReloadAnswer::precondition_failed(current.to_string()),
        ReloadOutcome::PreconditionFailed {
            current,
            effective: Some(found),
        } => ReloadAnswer::effective_precondition_failed(current.to_string(), &found),
        ReloadOutcome::Failed {
            reason,
            current,
            upstream,
        } => ReloadAnswer::failed(reason, current.to_string(), upstream),
        ReloadOutcome::Busy { since } => ReloadAnswer::busy(rfc3339(since)),
        ReloadOutcome::ShuttingDown { current } => ReloadAnswer::shutting_down(current.to_string()),
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

fn problems(errors: Vec<ConfigError>) -> Vec<ConfigProblem> {
    errors.into_iter().map(problem).collect()
}

fn problem(e: ConfigError) -> ConfigProblem {
    ConfigProblem {
        line: e.line,
        column: e.column,
        path: e.path,
        message: e.message,
    }
}

fn wire_changes(d: ConfigDiff) -> Changes {
    Changes {
        added: d.added,
        removed: d.removed,
        modified: d.modified.into_iter().map(modified).collect(),
        rotated: d.rotated.into_iter().map(modified).collect(),
        unchanged: d.unchanged,
        global: d.global,
    }
}

fn modified(m: Modified) -> ModifiedCluster {
    ModifiedCluster {
        name: m.name,
        reasons: m.reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sluice-proxy check` prints `sluice-config`'s errors, the watcher
    /// prints the admin API's: both print the same line.
    #[test]
    fn a_problem_prints_like_the_error_it_comes_from() {
        let at = |line, column, path: &str| ConfigError {
            line,
            column,
            path: path.to_owned(),
            message: "port 19092 is already used".to_owned(),
        };
        for e in [
            at(
                Some(14),
                Some(7),
                "virtualClusters[1].gateway.bootstrapPort",
            ),
            at(Some(14), None, "virtualClusters[1]"),
            at(Some(3), Some(1), ""),
            at(None, None, "admin"),
            at(None, None, ""),
        ] {
            assert_eq!(problem(e.clone()).to_string(), e.to_string());
        }
    }
}
