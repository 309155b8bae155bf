//! What `GET /admin/config/status` and `GET /admin/clusters` report, built
//! as the admin API's types: the version in force, the last reload and
//! validation attempts, and every cluster's generations.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use sluice_admin_api::{
    ClusterState, ClusterStatus, Clusters, ConfigStatus, DrainingStatus, FailedCluster,
    FailedVersion, FailureStage, ReloadAttempt, ReloadStatus, SniNames, ValidationAttempt,
    ValidationStatus,
};

use super::{Engine, Generation, rfc3339};
use crate::config::model::VirtualCluster;
use crate::events::ReloadResult;
use crate::lifecycle::State;

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
                .filter(|(_, g)| g.state == State::Failed)
                .map(|(name, g)| FailedCluster {
                    name: name.clone(),
                    error: g.reason.clone().unwrap_or_default(),
                    since: rfc3339(g.since),
                    since_current_version: g.since >= inner.applied_at,
                })
                .collect();
            (
                inner.config.version.to_string(),
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
                state: wire_state(g.state),
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

    pub(super) fn record_reload(
        &self,
        at: SystemTime,
        result: ReloadResult,
        requested_version: String,
        took: Duration,
        touched: Touched,
        error: Option<String>,
    ) {
        self.attempts().reload = Some(ReloadAttempt {
            timestamp: rfc3339(at),
            status: wire_result(result),
            requested_version,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            clusters_modified: touched.modified,
            clusters_added: touched.added,
            clusters_removed: touched.removed,
            error,
        });
    }

    /// Records that `version` failed at `stage`.
    pub(super) fn record_failure(&self, version: String, stage: FailureStage, reason: String) {
        self.attempts().failed = Some(FailedVersion {
            version,
            stage,
            reason,
            timestamp: rfc3339(SystemTime::now()),
        });
    }

    pub(super) fn record_validation(&self, requested_version: String, errors: usize) {
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
            requested_version,
            errors,
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

/// The lifecycle state as the admin API names it.
fn wire_state(state: State) -> ClusterState {
    match state {
        State::Initializing => ClusterState::Initializing,
        State::Accepting => ClusterState::Accepting,
        State::Draining => ClusterState::Draining,
        State::Stopped => ClusterState::Stopped,
        State::Failed => ClusterState::Failed,
    }
}

/// A reload's result as the admin API names it (the metrics' label values).
fn wire_result(result: ReloadResult) -> ReloadStatus {
    match result {
        ReloadResult::Applied => ReloadStatus::Applied,
        ReloadResult::Unchanged => ReloadStatus::Unchanged,
        ReloadResult::Rejected => ReloadStatus::Rejected,
        ReloadResult::Failed => ReloadStatus::Failed,
        ReloadResult::Conflict => ReloadStatus::Conflict,
        ReloadResult::PreconditionFailed => ReloadStatus::PreconditionFailed,
        ReloadResult::ShuttingDown => ReloadStatus::ShuttingDown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The admin API's names are the lifecycle's and the metrics' names.
    #[test]
    fn wire_names_match_the_internal_ones() {
        for state in State::ALL {
            assert_eq!(wire_state(state).as_str(), state.as_str());
        }
        for result in ReloadResult::ALL {
            let json = serde_json::to_value(wire_result(result)).unwrap();
            assert_eq!(json, result.as_str());
        }
    }
}
