//! What `GET /admin/config/status` and `GET /admin/clusters` report, built
//! as the admin API's types: the version in force, the last reload and
//! validation attempts, and every cluster's generations.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use sluice_admin_api::{
    AttemptedVersion, ClusterState, ClusterStatus, Clusters, ConfigStatus, DrainingStatus,
    FailedCluster, FailedVersion, FailureStage, ReloadAttempt, ReloadStatus, SniNames,
    ValidationAttempt, ValidationStatus, echoed_within,
};

use super::MAX_REASON_CHARS;
use super::{Engine, Generation, rfc3339};
use crate::config::model::VirtualCluster;

/// The clusters an applied reload added, modified and removed, apart.
#[derive(Debug, Clone, Default)]
pub(super) struct Touched {
    pub(super) added: Vec<String>,
    pub(super) modified: Vec<String>,
    pub(super) removed: Vec<String>,
}

/// The last reload and validation attempts.
#[derive(Debug, Clone, Default)]
pub(super) struct Attempts {
    pub(super) reload: Option<ReloadAttempt>,
    pub(super) validation: Option<ValidationAttempt>,
    /// The last version that failed, kept apart from the last attempts.
    pub(super) failed: Option<FailedVersion>,
}

impl Engine {
    /// The body of `GET /admin/config/status`.
    pub fn status(&self) -> ConfigStatus {
        let (version, referenced, applied_at, clusters_failed) = {
            let inner = self.lock();
            let failed = inner
                .clusters
                .iter()
                .filter(|(_, g)| g.state == ClusterState::Failed)
                .map(|(name, g)| FailedCluster {
                    name: name.clone(),
                    error: g.reason.clone().unwrap_or_default(),
                    since: rfc3339(g.since),
                    since_current_version: g.since >= inner.applied_at,
                })
                .collect();
            (
                inner.config.version.clone(),
                inner.config.referenced.clone(),
                inner.applied_at,
                failed,
            )
        };
        let attempts = self.attempts().clone();
        let running = *self
            .reloading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ConfigStatus {
            current_config_version: version,
            effective_version: referenced.effective_version,
            files: referenced.files,
            applied_at: rfc3339(applied_at),
            last_reload_attempt: attempts.reload,
            last_validation_attempt: attempts.validation,
            reload_in_progress_since: running.map(|(since, _)| rfc3339(since)),
            reload_in_progress_stage: running.map(|(_, stage)| stage),
            stopping: self.is_stopping(),
            instance: self.instance().to_owned(),
            ready: self.is_ready(),
            running_for_ms: SystemTime::now()
                .duration_since(applied_at)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            last_failed_version: attempts.failed,
            clusters_failed,
            analysis: self.analyses.shown(),
            held: self.is_held(),
        }
    }

    /// The body of `GET /admin/clusters`: every cluster's current
    /// generation, and the ones draining.
    pub fn clusters(&self) -> Clusters {
        let inner = self.lock();
        let draining = |name: &str| {
            inner
                .draining
                .iter()
                .filter(|d| d.runtime.as_ref().is_some_and(|r| r.name() == name))
                .map(|d| DrainingStatus {
                    generation: d.generation,
                    since: rfc3339(d.since),
                    active_connections: connections(d),
                })
                .collect()
        };
        let clusters = inner
            .clusters
            .iter()
            .map(|(name, g)| ClusterStatus {
                name: name.clone(),
                state: g.state,
                since: rfc3339(g.since),
                reason: g.reason.clone(),
                generation: g.generation,
                active_connections: connections(g),
                listeners: g.listeners.iter().map(ToString::to_string).collect(),
                sni: inner.config.config.cluster(name).and_then(sni_names),
                draining: draining(name),
            })
            .collect();
        Clusters { clusters }
    }

    fn attempts(&self) -> std::sync::MutexGuard<'_, Attempts> {
        self.status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A number for a new reload or validation attempt.
    pub(super) fn next_attempt(&self) -> u64 {
        self.next_attempt
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn record_reload(
        &self,
        attempt: u64,
        at: SystemTime,
        result: ReloadStatus,
        requested_version: Option<AttemptedVersion>,
        took: Duration,
        touched: Touched,
        error: Option<String>,
    ) {
        self.attempts().reload = Some(ReloadAttempt {
            timestamp: rfc3339(at),
            status: result,
            requested_version,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            clusters_modified: touched.modified,
            clusters_added: touched.added,
            clusters_removed: touched.removed,
            // Status is read without a token: whatever the error quotes is
            // escaped and cut (again: already so from a reload's outcome).
            error: error.map(|e| echoed_within(&e, MAX_REASON_CHARS)),
            attempt,
        });
    }

    /// Records that `version` failed at `stage`.
    pub(super) fn record_failure(
        &self,
        version: AttemptedVersion,
        stage: FailureStage,
        reason: String,
    ) {
        self.attempts().failed = Some(FailedVersion {
            version,
            stage,
            reason: echoed_within(&reason, MAX_REASON_CHARS),
            timestamp: rfc3339(SystemTime::now()),
        });
    }

    pub(super) fn record_validation(
        &self,
        attempt: u64,
        requested_version: AttemptedVersion,
        errors: usize,
    ) {
        if errors > 0 {
            self.record_failure(
                requested_version.clone(),
                FailureStage::Validate,
                format!("configuration invalid: {errors} errors"),
            );
        }
        self.attempts().validation = Some(ValidationAttempt {
            timestamp: rfc3339(SystemTime::now()),
            status: if errors == 0 {
                ValidationStatus::Valid
            } else {
                ValidationStatus::Invalid
            },
            requested_version: Some(requested_version),
            errors,
            attempt,
        });
    }
}

/// The server names of a cluster routed by SNI.
fn sni_names(cluster: &VirtualCluster) -> Option<SniNames> {
    let sni = cluster.gateway.sni()?;
    Some(SniNames {
        listener: SocketAddr::new(cluster.gateway.listen_host, sni.port.get()).to_string(),
        bootstrap_host: sni.bootstrap_host.to_string(),
        broker_host_pattern: sni.broker_host_pattern.to_string(),
    })
}

fn connections(g: &Generation) -> usize {
    g.runtime.as_ref().map_or(0, |r| r.active_connections())
}
