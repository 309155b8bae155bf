//! The lifecycle engine: owns every cluster generation and every listener.
//!
//! Bringing a cluster up is always two steps. *Prepare* builds a generation
//! (TLS, filters, metrics) and binds the ports it needs; it can fail, and a
//! failure releases what it took. *Commit* points the listeners at the new
//! generation; it cannot fail. Startup and reload are both prepare-then-commit;
//! a generation that is replaced or removed drains.
//!
//! - `prepare`: building generations, binding, routing
//! - `check`: the upstream check a reload runs before it prepares
//! - [`validate`]: what a reload of some bytes would do, without doing it
//! - [`reload`]: validate → diff → prepare → commit → persist → drain
//! - [`analysis`]: judging a reload by what clients see; the return to the
//!   last good version
//! - `drain`: ending a generation's connections
//! - `status`: what `/admin/config/status` and `/admin/clusters` report
//! - `hold`: a data plane held at startup (`run --hold`) until released

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime};

use tokio_util::task::TaskTracker;

use crate::config::model::StartupPolicy;
use crate::config::{FileSource, ProxyConfig, ValidConfig};
use crate::dataplane::cluster::ClusterRuntime;
use crate::dataplane::listener::{Hold, Listener};
use crate::events::Events;
use crate::metrics::Metrics;
use sluice_admin_api::ClusterState;
use sluice_admin_api::ReloadStage;

pub mod analysis;
mod check;
mod drain;
mod hold;
mod prepare;
pub mod reload;
mod status;
#[cfg(test)]
mod tests;
pub mod validate;

pub use analysis::{NoObserve, Observe};
pub use hold::Release;
pub use reload::{Attempted, Preconditions, ReloadOutcome};
pub use validate::ValidateOutcome;

/// The most characters of a failed reload's reason (in answers, status and
/// logs): one cause per bootstrap server of every cluster checked, each
/// escaped and cut alone.
pub(crate) const MAX_REASON_CHARS: usize = 4 * sluice_admin_api::MAX_ECHO_CHARS;

/// Writes an applied configuration somewhere a restart finds it (`run
/// --persist` gives one). Called with the exact bytes of every applied
/// reload, inside the reload (so two reloads never persist out of order).
pub type Persist = Box<dyn Fn(&[u8]) + Send + Sync>;

/// The process's proxy: configuration in force, generations and listeners.
pub struct Engine {
    metrics: Arc<Metrics>,
    events: Events,
    /// The certificate-expiry gauge of the clusters serving.
    expiry: crate::certs::Expiry,
    files: Arc<dyn FileSource>,
    /// Accept loops and drain tasks.
    tracker: TaskTracker,
    /// Held only for short reads and for a commit, never while a reload
    /// validates, checks upstreams or prepares.
    inner: Mutex<Inner>,
    ready: AtomicBool,
    /// Whether the data plane is held (`run --hold`): the same hold as
    /// `Inner::hold`, read here without the lock.
    hold: Hold,
    /// Set once at shutdown, under `inner`: from then on no reload commits
    /// and no listener opens again.
    stopping: AtomicBool,
    /// The number the next generation gets.
    next_generation: AtomicU64,
    /// The number the next reload or validation attempt gets: answers,
    /// status, log and audit lines carry it so that a caller can tell its
    /// own attempt from another's.
    next_attempt: AtomicU64,
    /// When the running reload started and the step it is at; `None` when
    /// none runs.
    reloading: Mutex<Option<(SystemTime, ReloadStage)>>,
    /// Woken whenever a reload ends: a SIGHUP refused because another
    /// reload ran waits for it, then applies the file.
    reload_ended: tokio::sync::Notify,
    status: Mutex<status::Attempts>,
    /// The configuration the process started with: what settings that only
    /// a restart applies are still set to.
    started_with: Arc<ProxyConfig>,
    /// Where applied configurations are written, if anywhere.
    persist: OnceLock<Persist>,
    /// This proxy's instance name (`run --instance`), reported in status.
    instance: OnceLock<String>,
    /// The client-side analysis of reloads, and the last good version.
    analyses: analysis::Analyses,
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
    /// Given to every listener a commit starts (startup and reload alike).
    hold: Hold,
}

impl Inner {
    /// The configured clusters whose current generation serves.
    fn serving(&self) -> impl Iterator<Item = &crate::config::model::VirtualCluster> {
        self.config.config.virtual_clusters.iter().filter(|c| {
            self.clusters
                .get(c.name.as_str())
                .is_some_and(|g| g.runtime.is_some())
        })
    }
}

/// One generation's record.
#[derive(Debug, Clone)]
struct Generation {
    runtime: Option<Arc<ClusterRuntime>>,
    generation: u64,
    state: ClusterState,
    since: SystemTime,
    reason: Option<String>,
    listeners: Vec<SocketAddr>,
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
        Engine::launch(
            config,
            metrics,
            files,
            analysis::no_observe(),
            Hold::new(false),
        )
    }

    /// Like [`Engine::start`], judging each reload that changes clusters by
    /// what `observe` sees of their clients (see [`analysis`]).
    pub fn start_with(
        config: ValidConfig,
        metrics: Arc<Metrics>,
        files: Arc<dyn FileSource>,
        observe: Arc<dyn Observe>,
    ) -> Result<Arc<Engine>, StartError> {
        Engine::launch(config, metrics, files, observe, Hold::new(false))
    }

    /// Like [`Engine::start_with`], its data plane held (`run --hold`):
    /// every port is bound and every cluster prepared, but each connection
    /// is closed as it comes until [`Engine::release`] (a reload that
    /// applies releases too: see [`Engine::release_after`]).
    pub fn start_held(
        config: ValidConfig,
        metrics: Arc<Metrics>,
        files: Arc<dyn FileSource>,
        observe: Arc<dyn Observe>,
    ) -> Result<Arc<Engine>, StartError> {
        Engine::launch(config, metrics, files, observe, Hold::new(true))
    }

    fn launch(
        config: ValidConfig,
        metrics: Arc<Metrics>,
        files: Arc<dyn FileSource>,
        observe: Arc<dyn Observe>,
        hold: Hold,
    ) -> Result<Arc<Engine>, StartError> {
        let events = Events::new(&metrics);
        let analyses = analysis::Analyses::new(&metrics, observe, &config);
        let expiry = crate::certs::Expiry::new(&metrics);
        let engine = Arc::new(Engine {
            metrics,
            events,
            expiry,
            files,
            tracker: TaskTracker::new(),
            inner: Mutex::new(Inner {
                config: config.clone(),
                applied_at: SystemTime::now(),
                clusters: BTreeMap::new(),
                draining: Vec::new(),
                listeners: HashMap::new(),
                hold: hold.clone(),
            }),
            ready: AtomicBool::new(false),
            hold,
            stopping: AtomicBool::new(false),
            next_generation: AtomicU64::new(1),
            next_attempt: AtomicU64::new(1),
            reloading: Mutex::new(None),
            reload_ended: tokio::sync::Notify::new(),
            status: Mutex::new(status::Attempts::default()),
            started_with: Arc::clone(&config.config),
            persist: OnceLock::new(),
            instance: OnceLock::new(),
            analyses,
        });
        // Set at startup; a change takes effect at the next reload.
        engine
            .metrics
            .configure_buffers_at_start(config.config.limits.max_buffered_bytes);
        engine.start_clusters(&config)?;
        engine.events.config_in_force(None, config.version.as_str());
        engine.ready.store(true, Ordering::Release);
        Ok(engine)
    }

    /// Prepares and commits every cluster of `config` (see [`Engine::start`]).
    fn start_clusters(&self, config: &ValidConfig) -> Result<(), StartError> {
        let mut failures = Vec::new();
        let mut inner = self.lock();
        let prepared = prepare::prepare_each(
            &prepare::held(&inner),
            &self.next_generation,
            &config.config.virtual_clusters,
            &self.metrics,
            &self.events,
            |failed| {
                failures.push(failed);
                ControlFlow::Continue(())
            },
        );
        let records: Vec<(String, String, Generation)> = failures
            .into_iter()
            .map(|f| {
                let record = prepare::failed(&f.name, f.generation, f.why.clone(), &self.events);
                (f.name, f.why, record)
            })
            .collect();
        if !records.is_empty() && config.config.startup_policy == StartupPolicy::FailFast {
            for p in prepared {
                let name = p.runtime.name().to_owned();
                prepare::failed(
                    &name,
                    p.runtime.generation,
                    "startup aborted".into(),
                    &self.events,
                );
            }
            let failures = records.into_iter().map(|(n, why, _)| (n, why)).collect();
            return Err(StartError { failures });
        }
        for (name, _, record) in records {
            inner.clusters.insert(name, record);
        }
        for p in prepared {
            prepare::commit(&mut inner, p, &self.tracker, &self.events, &self.metrics);
        }
        prepare::route_sni(&inner);
        for c in inner.serving() {
            self.expiry.set(c);
        }
        Ok(())
    }

    /// Makes every applied reload call `persist` with its bytes, from now
    /// on. A second hook is refused (returned): there is one place a
    /// restart reads its configuration from.
    pub fn set_persist(&self, persist: Persist) -> Result<(), Persist> {
        self.persist.set(persist)
    }

    /// Names this proxy (`run --instance`: the pod name) for status; once.
    pub fn set_instance(&self, name: String) -> Result<(), String> {
        self.instance.set(name)
    }

    /// This proxy's instance name (empty until set).
    pub fn instance(&self) -> &str {
        self.instance.get().map_or("", String::as_str)
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

    /// Whether startup finished and the proxy is not stopping.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Logs a warning for every certificate in force close to expiry (the
    /// server calls it periodically; each commit warns on its own).
    pub fn recheck_certificates(&self) {
        let inner = self.lock();
        for c in inner.serving() {
            self.expiry.recheck(c);
        }
    }

    /// Whether shutdown has begun: mutating admin calls answer 503.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Stops: not ready, no new connections, every generation drains (each
    /// connection ends at a request boundary, or at `drainTimeout`).
    pub async fn shutdown(self: &Arc<Self>) {
        self.ready.store(false, Ordering::Release);
        let (timeout, generations) = {
            let mut inner = self.lock();
            // Under the lock a reload commits under: none commits after this.
            self.stopping.store(true, Ordering::Release);
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
