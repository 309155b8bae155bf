//! Notable events of the control plane. Each is one function that logs it and
//! counts it, so logs and metrics never disagree.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use crate::metrics::Metrics;
use sluice_admin_api::{ClusterState, ReloadStatus};

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct VersionLabel {
    version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabels {
    cluster: String,
    state: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct TransitionLabels {
    cluster: String,
    from: &'static str,
    to: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ClusterGeneration {
    cluster: String,
    generation: String,
}

/// The control plane's metrics, and the functions that report events.
#[derive(Debug, Clone)]
pub(crate) struct Events {
    reloads: Family<ResultLabel, Counter>,
    reload_seconds: Histogram,
    config_info: Family<VersionLabel, Gauge>,
    states: Family<StateLabels, Gauge>,
    /// Serialises state counts, so that a series removed at zero never
    /// loses a concurrent increment.
    states_lock: Arc<Mutex<()>>,
    transitions: Family<TransitionLabels, Counter>,
    drain_seconds: Histogram,
    generation_connections: Family<ClusterGeneration, Gauge>,
}

impl Events {
    /// Registers the control-plane metrics.
    pub(crate) fn new(metrics: &Metrics) -> Self {
        let e = Events {
            reloads: Family::default(),
            reload_seconds: Histogram::new(exponential_buckets(0.0005, 2.0, 16)),
            config_info: Family::default(),
            states: Family::default(),
            states_lock: Arc::default(),
            transitions: Family::default(),
            drain_seconds: Histogram::new(exponential_buckets(0.01, 2.0, 16)),
            generation_connections: Family::default(),
        };
        metrics.register(
            "config_reload",
            "Reload attempts by result (applied, unchanged, rejected, failed, conflict, precondition_failed, shutting_down)",
            e.reloads.clone(),
        );
        metrics.register(
            "config_reload_duration_seconds",
            "Time from receiving a configuration to committing it",
            e.reload_seconds.clone(),
        );
        metrics.register(
            "config_info",
            "The configuration version in force (value 1)",
            e.config_info.clone(),
        );
        metrics.register(
            "virtual_cluster_state",
            "Generations of each cluster in each lifecycle state",
            e.states.clone(),
        );
        metrics.register(
            "virtual_cluster_transitions",
            "Lifecycle transitions of cluster generations",
            e.transitions.clone(),
        );
        metrics.register(
            "drain_duration_seconds",
            "Time a generation took to drain, from the start of the drain to its last connection",
            e.drain_seconds.clone(),
        );
        metrics.register(
            "generation_connections_active",
            "Client connections open now, per cluster generation",
            e.generation_connections.clone(),
        );
        // Every result exists from the start, at 0: an alert on
        // `increase(...{result="failed"})` sees the first failure too.
        for result in ReloadStatus::ALL {
            e.reloads.get_or_create_owned(&ResultLabel {
                result: result.as_str(),
            });
        }
        e
    }

    /// Reload attempt number `attempt`, about `version`, ended.
    pub(crate) fn reload(
        &self,
        result: ReloadStatus,
        attempt: u64,
        version: &str,
        duration: Duration,
        detail: &str,
    ) {
        self.reloads
            .get_or_create(&ResultLabel {
                result: result.as_str(),
            })
            .inc();
        let ms = duration.as_secs_f64() * 1e3;
        match result {
            ReloadStatus::Applied => {
                self.reload_seconds.observe(duration.as_secs_f64());
                tracing::info!(
                    attempt,
                    version,
                    duration_ms = ms,
                    changes = detail,
                    "configuration reloaded"
                );
            }
            ReloadStatus::Unchanged => {
                tracing::info!(
                    attempt,
                    version,
                    "reload requested with the configuration in force; nothing to do"
                )
            }
            ReloadStatus::ShuttingDown => {
                tracing::warn!(
                    attempt,
                    version,
                    "reload refused: the proxy is shutting down; nothing changed"
                )
            }
            ReloadStatus::Rejected => {
                tracing::warn!(
                    attempt,
                    version,
                    errors = detail,
                    "reload rejected: configuration invalid; nothing changed"
                )
            }
            ReloadStatus::Failed => {
                tracing::error!(
                    attempt,
                    version,
                    error = detail,
                    "reload failed while preparing; nothing changed"
                )
            }
            ReloadStatus::Conflict => {
                tracing::warn!(
                    attempt,
                    version,
                    "reload refused: another reload is running"
                )
            }
            ReloadStatus::PreconditionFailed => {
                tracing::warn!(
                    attempt,
                    version,
                    current = detail,
                    "reload refused: If-Match names another version"
                )
            }
        }
    }

    /// A configuration version came into force.
    pub(crate) fn config_in_force(&self, old: Option<&str>, new: &str) {
        if let Some(old) = old {
            self.config_info.remove(&VersionLabel {
                version: old.to_owned(),
            });
        }
        self.config_info
            .get_or_create(&VersionLabel {
                version: new.to_owned(),
            })
            .set(1);
    }

    /// A generation changed state.
    pub(crate) fn transition(
        &self,
        cluster: &str,
        generation: u64,
        from: Option<ClusterState>,
        to: ClusterState,
        reason: Option<&str>,
    ) {
        if let Some(from) = from {
            self.count_state(cluster, from, -1);
            self.transitions
                .get_or_create(&TransitionLabels {
                    cluster: cluster.to_owned(),
                    from: from.as_str(),
                    to: to.as_str(),
                })
                .inc();
        }
        self.count_state(cluster, to, 1);
        let from = from.map_or("none", ClusterState::as_str);
        match to {
            ClusterState::Failed => {
                tracing::error!(
                    cluster,
                    generation,
                    from,
                    to = to.as_str(),
                    reason,
                    "cluster generation failed"
                )
            }
            _ => tracing::info!(
                cluster,
                generation,
                from,
                to = to.as_str(),
                "cluster generation state changed"
            ),
        }
    }

    /// A generation finished draining.
    pub(crate) fn drained(&self, cluster: &str, generation: u64, took: Duration, forced: bool) {
        self.drain_seconds.observe(took.as_secs_f64());
        self.generation_connections.remove(&ClusterGeneration {
            cluster: cluster.to_owned(),
            generation: generation.to_string(),
        });
        if forced {
            tracing::warn!(
                cluster,
                generation,
                took_ms = took.as_millis() as u64,
                "drain deadline reached; remaining connections were closed"
            );
        } else {
            tracing::info!(
                cluster,
                generation,
                took_ms = took.as_millis() as u64,
                "generation drained"
            );
        }
    }

    /// A generation in a terminal state that nothing keeps any longer (a
    /// failed prepare of a reload that changed nothing, or a failed record
    /// replaced or removed): its state and connection series go, so that
    /// retries cannot grow the metrics without bound.
    pub(crate) fn forget(&self, cluster: &str, generation: u64, state: ClusterState) {
        self.count_state(cluster, state, -1);
        self.generation_connections.remove(&ClusterGeneration {
            cluster: cluster.to_owned(),
            generation: generation.to_string(),
        });
        tracing::debug!(
            cluster,
            generation,
            state = state.as_str(),
            "generation forgotten"
        );
    }

    /// Adds `delta` generations to a cluster's count in `state`. Stopped
    /// generations are not counted, and a count back at zero is removed, so
    /// a cluster that is gone leaves no series.
    fn count_state(&self, cluster: &str, state: ClusterState, delta: i64) {
        if state == ClusterState::Stopped {
            return;
        }
        let labels = StateLabels {
            cluster: cluster.to_owned(),
            state: state.as_str(),
        };
        let _serial = self
            .states_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = self.states.get_or_create(&labels).inc_by(delta) + delta;
        if now <= 0 {
            self.states.remove(&labels);
        }
    }

    /// The gauge of open connections of one generation.
    pub(crate) fn generation_gauge(&self, cluster: &str, generation: u64) -> Gauge {
        self.generation_connections
            .get_or_create_owned(&ClusterGeneration {
                cluster: cluster.to_owned(),
                generation: generation.to_string(),
            })
    }
}
