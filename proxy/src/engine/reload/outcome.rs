//! How a reload ended.

use std::time::{Duration, SystemTime};

use sluice_admin_api::{AttemptedVersion, UpstreamCheckFailure, echoed, echoed_within};

use crate::engine::MAX_REASON_CHARS;

use crate::config::{Changes, ConfigProblem, ConfigVersion, EffectiveVersion};
use crate::dataplane::check::CheckFailed;

/// What a reload must find to apply: the admin API's `If-Match` and
/// `If-Effective-Match`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Preconditions<'a> {
    /// The configuration version that must be in force.
    pub config: Option<&'a str>,
    /// The effective version the bytes sent must have with their referenced
    /// files as read for this reload.
    pub effective: Option<&'a str>,
}

/// One reload attempt: its number, the version it was about, how it ended.
#[derive(Debug, Clone)]
pub struct Attempted {
    /// This process's number for it (from 1, shared with validations).
    pub attempt: u64,
    /// The version status records it under; `None` when it was refused
    /// before it read its bytes (another reload running).
    pub version: Option<AttemptedVersion>,
    /// How it ended.
    pub outcome: ReloadOutcome,
}

/// How a reload ended.
#[derive(Debug, Clone)]
pub enum ReloadOutcome {
    /// The new configuration is in force.
    Applied {
        /// Its version.
        version: ConfigVersion,
        /// What changed.
        changes: Changes,
        /// From receipt to commit.
        duration: Duration,
        /// Settings in force that take effect only at the next start.
        restart_required: Vec<String>,
        /// Clusters that could not start (best-effort only), and why.
        failed: Vec<(String, String)>,
    },
    /// The configuration in force was sent again (same bytes, same files).
    Unchanged {
        /// The version in force.
        version: ConfigVersion,
        /// Every cluster, all left alone.
        unchanged: Vec<String>,
        /// Settings in force that take effect only at the next start (set
        /// by an earlier reload).
        restart_required: Vec<String>,
    },
    /// The configuration is invalid; nothing was touched.
    Rejected {
        /// Version of the bytes sent.
        version: ConfigVersion,
        /// Every error.
        errors: Vec<ConfigProblem>,
    },
    /// `If-Match` named a version other than the one in force, or
    /// `If-Effective-Match` an effective version other than that of the
    /// bytes sent with their files as read now.
    PreconditionFailed {
        /// The version in force.
        current: ConfigVersion,
        /// For `If-Effective-Match`: the effective version found.
        effective: Option<EffectiveVersion>,
    },
    /// Preparing failed (a port taken, say), or the upstream check did;
    /// nothing was touched.
    Failed {
        /// What failed.
        reason: String,
        /// The version still in force.
        current: ConfigVersion,
        /// The upstream check's failures, per bootstrap server, if that is
        /// what failed (final for this version).
        upstream: Vec<UpstreamCheckFailure>,
    },
    /// Another reload is running.
    Busy {
        /// When it started.
        since: SystemTime,
    },
    /// The proxy is stopping; nothing was touched.
    ShuttingDown {
        /// The version still in force.
        current: ConfigVersion,
    },
}

/// The outcome of a failed upstream check: final for the version. Causes
/// may carry a broker's or a certificate's words: escaped and cut here, so
/// the answer, status and the log all echo the same harmless text.
pub(super) fn upstream_failed(failed: Vec<CheckFailed>, current: ConfigVersion) -> ReloadOutcome {
    let reason = failed
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    let reason = echoed_within(&reason, MAX_REASON_CHARS);
    let upstream = failed
        .into_iter()
        .flat_map(|f| {
            let cluster = f.cluster;
            f.servers
                .into_iter()
                .map(move |(address, cause)| UpstreamCheckFailure {
                    cluster: cluster.clone(),
                    address,
                    cause: echoed(&cause.to_string()),
                })
        })
        .collect();
    ReloadOutcome::Failed {
        reason,
        current,
        upstream,
    }
}
