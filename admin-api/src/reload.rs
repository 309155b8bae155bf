//! `POST /admin/config/reload`: make a configuration the one in force. The
//! proxy prepares everything that can fail first, so every answer but 200
//! means nothing running was touched.

use serde::{Deserialize, Serialize};

use crate::version::{AttemptedVersion, ConfigVersion, EffectiveVersion};

use crate::error::{Refused, read};
use crate::{ConfigProblem, ModifiedCluster};

mod attempt;

pub(crate) use attempt::unnumbered;

/// The answer, by status.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ReloadAnswer {
    /// 200: in force, now or already.
    Applied(ReloadApplied),
    /// 400: invalid; nothing touched.
    Rejected(ReloadRejected),
    /// 409: another reload is running; nothing touched.
    Busy(ReloadBusy),
    /// 412: `If-Match` names another version than the one in force; nothing
    /// touched.
    PreconditionFailed(ReloadNotApplied),
    /// 500: preparing failed (a port taken, say); nothing touched.
    Failed(ReloadNotApplied),
    /// 503: the proxy is stopping (SIGTERM); nothing touched, and no
    /// listener opens again on this process.
    ShuttingDown(ReloadNotApplied),
}

/// 200: the configuration is in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadApplied {
    /// Always `true`: tells success apart without the status.
    pub success: bool,
    /// Whether anything changed; `false` when the configuration in force was
    /// sent again, which is not an error (a retried reload is harmless).
    pub changed: bool,
    /// The version now in force, for the next `If-Match`.
    pub config_version: ConfigVersion,
    /// Clusters started.
    pub clusters_added: Vec<String>,
    /// Clusters now draining.
    pub clusters_removed: Vec<String>,
    /// Clusters that got a new generation (the old one drains), and why.
    pub clusters_modified: Vec<ModifiedCluster>,
    /// Clusters whose TLS material was swapped into the running generation:
    /// no new generation, no drain. (Absent from older proxies: read as
    /// empty.)
    #[serde(default)]
    pub clusters_rotated: Vec<ModifiedCluster>,
    /// Clusters left alone, connections and all; every cluster when nothing
    /// changed. (Absent from proxies before the typed API: read as empty.)
    #[serde(default)]
    pub clusters_unchanged: Vec<String>,
    /// From receipt to commit, in milliseconds: how long the proxy took.
    pub duration_ms: f64,
    /// Settings in force in the configuration that the running process
    /// cannot apply (the admin listener's address): they take effect at the
    /// next restart, which someone has to do. Repeated on every answer until
    /// then. (Absent from proxies before the typed API: read as empty.)
    #[serde(default)]
    pub restart_required: Vec<String>,
    /// Under `startupPolicy: best-effort`, clusters that could not start in
    /// this reload (added ones, or ones already failed that it retried):
    /// they do not block the others, and each reload retries them. Empty
    /// when every cluster serves.
    #[serde(default)]
    pub clusters_failed: Vec<crate::FailedCluster>,
    /// This proxy process's number for the attempt (from 1, shared by
    /// reloads and validations): matches `attempt` in status and the log
    /// and audit lines. 0 from a proxy that does not number attempts.
    #[serde(default, skip_serializing_if = "crate::reload::unnumbered")]
    pub attempt: u64,
}

/// 400: the configuration is invalid; the body is a validate 400's plus
/// `success`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadRejected {
    /// Always `false`.
    pub success: bool,
    /// Always `false`: this failure is the configuration's.
    pub valid: bool,
    /// `sha256:<hex>` of the bytes sent, so a caller can remember which
    /// content was rejected and not send it again.
    pub config_version: ConfigVersion,
    /// Every problem found, sorted by position.
    pub errors: Vec<ConfigProblem>,
    /// This proxy process's number for the attempt (from 1, shared by
    /// reloads and validations): matches `attempt` in status and the log
    /// and audit lines. 0 from a proxy that does not number attempts.
    #[serde(default, skip_serializing_if = "crate::reload::unnumbered")]
    pub attempt: u64,
}

/// 409: another reload is running. Worth retrying shortly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadBusy {
    /// Always `false`.
    pub success: bool,
    /// For a human.
    pub error: String,
    /// When the running reload started (RFC 3339): one that runs for long
    /// is worth a look at the proxy's log.
    pub in_progress_since: String,
    /// This proxy process's number for the attempt (from 1, shared by
    /// reloads and validations): matches `attempt` in status and the log
    /// and audit lines. 0 from a proxy that does not number attempts.
    #[serde(default, skip_serializing_if = "crate::reload::unnumbered")]
    pub attempt: u64,
}

/// 412, 500 and 503: not applied, for a reason that is not the configuration's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadNotApplied {
    /// Always `false`.
    pub success: bool,
    /// What failed, for a human.
    pub error: String,
    /// The version still in force: after a 412, what `If-Match` should have
    /// named.
    pub config_version: ConfigVersion,
    /// When the upstream check failed: per bootstrap server of each failing
    /// cluster, the address and the cause. Such a failure is final for the
    /// version: retrying the same bytes cannot help (a new version can).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstream_check: Vec<UpstreamCheckFailure>,
    /// The version the attempt was about (the bytes sent; their effective
    /// version when they are the bytes in force), when it read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_version: Option<AttemptedVersion>,
    /// This proxy process's number for the attempt (from 1, shared by
    /// reloads and validations): matches `attempt` in status and the log
    /// and audit lines. 0 from a proxy that does not number attempts.
    #[serde(default, skip_serializing_if = "crate::reload::unnumbered")]
    pub attempt: u64,
}

/// One bootstrap server that failed a reload's upstream check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamCheckFailure {
    /// The virtual cluster.
    pub cluster: String,
    /// The bootstrap server, `host:port`.
    pub address: String,
    /// What went wrong: `connection refused`, `no answer within 10s`, a TLS
    /// certificate problem, a Kafka error.
    pub cause: String,
}

impl ReloadNotApplied {
    /// Whether retrying the same configuration cannot succeed (its upstream
    /// check failed).
    pub fn is_final(&self) -> bool {
        !self.upstream_check.is_empty()
    }
}

impl ReloadAnswer {
    /// 409.
    pub fn busy(in_progress_since: String) -> ReloadAnswer {
        ReloadAnswer::Busy(ReloadBusy {
            success: false,
            error: "another reload is in progress".to_owned(),
            in_progress_since,
            attempt: 0,
        })
    }

    /// 412.
    pub fn precondition_failed(config_version: ConfigVersion) -> ReloadAnswer {
        ReloadAnswer::PreconditionFailed(ReloadNotApplied {
            success: false,
            error: "If-Match does not name the configuration version in force".to_owned(),
            config_version,
            upstream_check: Vec::new(),
            requested_version: None,
            attempt: 0,
        })
    }

    /// 412 for [`crate::endpoints::IF_EFFECTIVE_MATCH`]: the referenced
    /// files, as read for this reload, have effective version `found`.
    pub fn effective_precondition_failed(
        config_version: ConfigVersion,
        found: &EffectiveVersion,
    ) -> ReloadAnswer {
        ReloadAnswer::PreconditionFailed(ReloadNotApplied {
            success: false,
            error: format!(
                "If-Effective-Match does not name the referenced files as read now (effective version {found})"
            ),
            config_version,
            upstream_check: Vec::new(),
            requested_version: None,
            attempt: 0,
        })
    }

    /// 500.
    pub fn failed(
        error: String,
        config_version: ConfigVersion,
        upstream_check: Vec<UpstreamCheckFailure>,
    ) -> ReloadAnswer {
        ReloadAnswer::Failed(ReloadNotApplied {
            success: false,
            error,
            config_version,
            upstream_check,
            requested_version: None,
            attempt: 0,
        })
    }

    /// 503.
    pub fn shutting_down(config_version: ConfigVersion) -> ReloadAnswer {
        ReloadAnswer::ShuttingDown(ReloadNotApplied {
            success: false,
            error: "the proxy is shutting down: no reload is applied and no listener opens again"
                .to_owned(),
            config_version,
            upstream_check: Vec::new(),
            requested_version: None,
            attempt: 0,
        })
    }

    /// 400.
    pub fn rejected(config_version: ConfigVersion, errors: Vec<ConfigProblem>) -> ReloadAnswer {
        ReloadAnswer::Rejected(ReloadRejected {
            success: false,
            valid: false,
            config_version,
            errors,
            attempt: 0,
        })
    }

    /// The HTTP status that goes with the answer.
    pub fn status(&self) -> u16 {
        match self {
            ReloadAnswer::Applied(_) => 200,
            ReloadAnswer::Rejected(_) => 400,
            ReloadAnswer::Busy(_) => 409,
            ReloadAnswer::PreconditionFailed(_) => 412,
            ReloadAnswer::Failed(_) => 500,
            ReloadAnswer::ShuttingDown(_) => 503,
        }
    }

    /// Reads an HTTP answer: its status picks the shape. Any other status,
    /// or a 500 without this shape (a bug in the proxy, not a failed
    /// prepare), is a [`Refused`].
    pub fn from_http(status: u16, body: &[u8]) -> Result<ReloadAnswer, Refused> {
        match status {
            200 => read(status, body).map(ReloadAnswer::Applied),
            400 => read(status, body).map(ReloadAnswer::Rejected),
            409 => read(status, body).map(ReloadAnswer::Busy),
            412 => read(status, body).map(ReloadAnswer::PreconditionFailed),
            500 => read(status, body)
                .map(ReloadAnswer::Failed)
                .map_err(|_| Refused::new(status, body)),
            503 => read(status, body)
                .map(ReloadAnswer::ShuttingDown)
                .map_err(|_| Refused::new(status, body)),
            _ => Err(Refused::new(status, body)),
        }
    }
}

#[cfg(test)]
mod tests;
