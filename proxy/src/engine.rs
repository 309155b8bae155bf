//! The lifecycle engine: owns every cluster generation and every listener.
//!
//! Bringing a cluster up is always two steps. *Prepare* builds a generation
//! (TLS, filters, metrics) and binds the ports it needs; it can fail, and a
//! failure releases what it took. *Commit* points the listeners at the new
//! generation; it cannot fail. Startup and reload are both prepare-then-commit;
//! a generation that is replaced or removed drains.
//!
//! - `prepare`: building generations, binding, routing
//! - [`reload`]: validate → diff → prepare → commit → drain
//! - `drain`: ending a generation's connections
//! - [`status`]: what `/admin/config/status` reports

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio_util::task::TaskTracker;

use crate::config::model::StartupPolicy;
use crate::config::{FileSource, ValidConfig};
use crate::dataplane::cluster::ClusterRuntime;
use crate::dataplane::listener::Listener;
use crate::events::Events;
use crate::lifecycle::State;
use crate::metrics::Metrics;

mod drain;
mod prepare;
pub mod reload;
pub mod status;

pub use reload::ReloadOutcome;
pub use status::ConfigStatus;

/// The process's proxy: configuration in force, generations and listeners.
pub struct Engine {
    metrics: Arc<Metrics>,
    events: Events,
    files: Arc<dyn FileSource>,
    /// Accept loops and drain tasks.
    tracker: TaskTracker,
    inner: Mutex<Inner>,
    ready: AtomicBool,
    /// When the running reload started; `None` when none runs.
    reloading: Mutex<Option<SystemTime>>,
    status: Mutex<status::Attempts>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Inner {
    config: ValidConfig,
    applied_at: SystemTime,
    /// The current generation of every configured cluster.
    clusters: BTreeMap<String, Generation>,
    /// Replaced or removed generations still draining.
    draining: Vec<Generation>,
    /// Every bound socket, by address.
    listeners: HashMap<SocketAddr, Listener>,
    next_generation: u64,
}

/// One generation's record.
#[derive(Debug, Clone)]
struct Generation {
    runtime: Option<Arc<ClusterRuntime>>,
    generation: u64,
    state: State,
    since: SystemTime,
    reason: Option<String>,
    listeners: Vec<SocketAddr>,
}

/// A cluster as `GET /admin/clusters` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// The cluster's name.
    pub name: String,
    /// Lifecycle state of its current generation.
    pub state: State,
    /// When it entered that state (RFC 3339).
    pub since: String,
    /// Why it is in that state, when it failed.
    pub reason: Option<String>,
    /// Its generation number.
    pub generation: u64,
    /// Client connections open on it.
    pub active_connections: usize,
    /// Addresses it listens on.
    pub listeners: Vec<String>,
    /// Older generations still draining.
    pub draining: Vec<DrainingStatus>,
}

/// A generation that is draining.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainingStatus {
    /// Its generation number.
    pub generation: u64,
    /// When it started draining (RFC 3339).
    pub since: String,
    /// Connections still open.
    pub active_connections: usize,
}

/// Startup failed under `startupPolicy: fail-fast`.
#[derive(Debug, thiserror::Error)]
#[error("{} virtual cluster(s) failed to start: {}", .failures.len(), describe(.failures))]
pub struct StartError {
    /// Each failed cluster and why.
    pub failures: Vec<(String, String)>,
}

fn describe(failures: &[(String, String)]) -> String {
    failures
        .iter()
        .map(|(name, why)| format!("{name}: {why}"))
        .collect::<Vec<_>>()
        .join("; ")
}

pub(crate) fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

impl Engine {
    /// Starts every cluster of `config`; referenced files of later reloads
    /// are read from `files`. Under fail-fast, any failure stops startup
    /// (everything taken is released) and names every failed cluster; under
    /// best-effort, failed clusters are reported and the rest serve.
    pub fn start(
        config: ValidConfig,
        metrics: Arc<Metrics>,
        files: Arc<dyn FileSource>,
    ) -> Result<Arc<Engine>, StartError> {
        let events = Events::new(&metrics);
        let engine = Arc::new(Engine {
            metrics,
            events,
            files,
            tracker: TaskTracker::new(),
            inner: Mutex::new(Inner {
                config: config.clone(),
                applied_at: SystemTime::now(),
                clusters: BTreeMap::new(),
                draining: Vec::new(),
                listeners: HashMap::new(),
                next_generation: 1,
            }),
            ready: AtomicBool::new(false),
            reloading: Mutex::new(None),
            status: Mutex::new(status::Attempts::default()),
        });
        let mut prepared = Vec::new();
        let mut failures = Vec::new();
        let mut inner = engine.lock();
        for cluster in &config.config.virtual_clusters {
            let generation = inner.next_generation;
            inner.next_generation += 1;
            match prepare::prepare(
                cluster,
                generation,
                &engine.metrics,
                &engine.events,
                &inner.listeners,
            ) {
                Ok(p) => prepared.push(p),
                Err(why) => {
                    let name = cluster.name.to_string();
                    failures.push((name.clone(), why.clone()));
                    let record = prepare::failed(&name, generation, why, &engine.events);
                    inner.clusters.insert(name, record);
                }
            }
        }
        if !failures.is_empty() && config.config.startup_policy == StartupPolicy::FailFast {
            for p in prepared {
                let name = p.runtime.name().to_owned();
                prepare::failed(
                    &name,
                    p.runtime.generation,
                    "startup aborted".into(),
                    &engine.events,
                );
            }
            return Err(StartError { failures });
        }
        for p in prepared {
            prepare::commit(&mut inner, p, &engine.tracker, &engine.events);
        }
        drop(inner);
        engine.events.config_in_force(None, config.version.as_str());
        engine.ready.store(true, Ordering::Release);
        Ok(engine)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The configuration in force.
    pub fn config(&self) -> ValidConfig {
        self.lock().config.clone()
    }

    /// Where referenced files are read from.
    pub fn files(&self) -> &dyn FileSource {
        &*self.files
    }

    /// Whether startup finished and the proxy is not stopping.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Every cluster's current generation, and the ones draining.
    pub fn clusters(&self) -> Vec<ClusterStatus> {
        let inner = self.lock();
        inner
            .clusters
            .iter()
            .map(|(name, g)| ClusterStatus {
                name: name.clone(),
                state: g.state,
                since: rfc3339(g.since),
                reason: g.reason.clone(),
                generation: g.generation,
                active_connections: g.runtime.as_ref().map_or(0, |r| r.active_connections()),
                listeners: g.listeners.iter().map(ToString::to_string).collect(),
                draining: inner
                    .draining
                    .iter()
                    .filter(|d| d.runtime.as_ref().is_some_and(|r| r.name() == name))
                    .map(|d| DrainingStatus {
                        generation: d.generation,
                        since: rfc3339(d.since),
                        active_connections: d
                            .runtime
                            .as_ref()
                            .map_or(0, |r| r.active_connections()),
                    })
                    .collect(),
            })
            .collect()
    }

    /// Stops: not ready, no new connections, every generation drains (each
    /// connection ends at a request boundary, or at `drainTimeout`).
    pub async fn shutdown(self: &Arc<Self>) {
        self.ready.store(false, Ordering::Release);
        let (timeout, generations) = {
            let mut inner = self.lock();
            // The ports close as the accept loops end; nothing waits for them.
            for (_, listener) in inner.listeners.drain() {
                drop(listener.close());
            }
            let names: Vec<String> = inner.clusters.keys().cloned().collect();
            let mut generations = Vec::new();
            for name in names {
                if let Some(g) = inner.clusters.remove(&name) {
                    generations.push((name, g));
                }
            }
            (inner.config.config.drain_timeout, generations)
        };
        for (name, g) in generations {
            self.drain(&name, g, timeout);
        }
        self.tracker.close();
        // Drains end by themselves at the deadline; the margin only guards
        // against a bug keeping a task alive.
        let margin = Duration::from_secs(5);
        if tokio::time::timeout(timeout + margin, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::error!("drain tasks still running after the drain timeout; exiting anyway");
        }
    }
}
