//! The lifecycle engine: owns every cluster generation and every listener.
//!
//! Bringing a cluster up is always two steps. *Prepare* builds a generation
//! (TLS, filters, metrics) and binds the ports it needs; it can fail, and a
//! failure releases what it took. *Commit* points the listeners at the new
//! generation; it cannot fail. Startup is prepare + commit for every cluster,
//! under the configured startup policy.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::net::TcpListener;
use tokio_util::task::TaskTracker;

use crate::config::ValidConfig;
use crate::config::model::{StartupPolicy, VirtualCluster};
use crate::dataplane::cluster::ClusterRuntime;
use crate::dataplane::connection::Role;
use crate::dataplane::listener::{self, Listener, Route};
use crate::lifecycle::{Event, State};
use crate::metrics::Metrics;

/// The process's proxy: configuration in force, generations and listeners.
#[derive(Debug)]
pub struct Engine {
    metrics: Arc<Metrics>,
    tracker: TaskTracker,
    inner: Mutex<Inner>,
    ready: AtomicBool,
}

#[derive(Debug)]
struct Inner {
    config: ValidConfig,
    /// The current generation of every configured cluster.
    clusters: BTreeMap<String, Generation>,
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

/// A generation built and its sockets bound, not yet routed.
struct Prepared {
    runtime: Arc<ClusterRuntime>,
    /// Each address with its role, and a fresh socket unless the address is
    /// already held by a listener (then that listener is handed over).
    sockets: Vec<(SocketAddr, Role, Option<TcpListener>)>,
}

impl Engine {
    /// Starts every cluster of `config`. Under fail-fast, any failure stops
    /// startup (everything taken is released) and names every failed
    /// cluster; under best-effort, failed clusters are reported and the rest serve.
    pub fn start(config: ValidConfig, metrics: Arc<Metrics>) -> Result<Arc<Engine>, StartError> {
        let engine = Arc::new(Engine {
            metrics,
            tracker: TaskTracker::new(),
            inner: Mutex::new(Inner {
                config: config.clone(),
                clusters: BTreeMap::new(),
                listeners: HashMap::new(),
                next_generation: 1,
            }),
            ready: AtomicBool::new(false),
        });
        let mut prepared = Vec::new();
        let mut failures = Vec::new();
        {
            let mut inner = engine.lock();
            for cluster in &config.config.virtual_clusters {
                let generation = inner.next_generation;
                inner.next_generation += 1;
                match prepare(cluster, generation, &engine.metrics, &inner.listeners) {
                    Ok(p) => prepared.push(p),
                    Err(why) => {
                        tracing::error!(cluster = %cluster.name, error = %why, "virtual cluster failed to start");
                        failures.push((cluster.name.to_string(), why.clone()));
                        inner.clusters.insert(
                            cluster.name.to_string(),
                            Generation {
                                runtime: None,
                                generation,
                                state: transition(State::Initializing, Event::PrepareFailed),
                                since: SystemTime::now(),
                                reason: Some(why),
                                listeners: Vec::new(),
                            },
                        );
                    }
                }
            }
        }
        if !failures.is_empty() && config.config.startup_policy == StartupPolicy::FailFast {
            // Dropping `prepared` closes every socket bound so far.
            return Err(StartError { failures });
        }
        {
            let mut inner = engine.lock();
            for p in prepared {
                commit(&mut inner, p, &engine.tracker);
            }
        }
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

    /// Whether startup finished and the proxy is not stopping.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Every cluster's current generation.
    pub fn clusters(&self) -> Vec<ClusterStatus> {
        let inner = self.lock();
        inner
            .clusters
            .iter()
            .map(|(name, g)| ClusterStatus {
                name: name.clone(),
                state: g.state,
                since: humantime::format_rfc3339_millis(g.since).to_string(),
                reason: g.reason.clone(),
                generation: g.generation,
                active_connections: g.runtime.as_ref().map_or(0, |r| r.active_connections()),
                listeners: g.listeners.iter().map(ToString::to_string).collect(),
            })
            .collect()
    }

    /// Stops: not ready, no new connections, then waits up to `grace` for
    /// open connections to end.
    pub async fn shutdown(&self, grace: Duration) {
        self.ready.store(false, Ordering::Release);
        {
            let mut inner = self.lock();
            for listener in inner.listeners.values() {
                listener.close();
            }
            inner.listeners.clear();
        }
        self.tracker.close();
        if tokio::time::timeout(grace, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(grace = ?grace, "connections still open at the end of the drain timeout; closing them");
        }
    }
}

fn transition(from: State, event: Event) -> State {
    match from.on(event) {
        Ok(to) => to,
        Err(e) => {
            // A bug: keep the old state, say so loudly.
            tracing::error!(error = %e, "lifecycle bug");
            from
        }
    }
}

/// Every address a cluster listens on, with what each leads to.
fn addresses(cluster: &VirtualCluster) -> Vec<(SocketAddr, Role)> {
    let g = &cluster.gateway;
    let mut out = vec![(
        SocketAddr::new(g.listen_host, g.bootstrap_port.get()),
        Role::Bootstrap,
    )];
    for i in 0..g.broker_ports.count {
        let port = g.broker_ports.start.get() + i;
        let node = g.broker_ports.first_node_id + i32::from(i);
        out.push((SocketAddr::new(g.listen_host, port), Role::Broker(node)));
    }
    out
}

/// Builds a generation and binds the ports not already held.
fn prepare(
    cluster: &VirtualCluster,
    generation: u64,
    metrics: &Arc<Metrics>,
    held: &HashMap<SocketAddr, Listener>,
) -> Result<Prepared, String> {
    let runtime =
        ClusterRuntime::prepare(cluster, generation, metrics).map_err(|e| e.to_string())?;
    let mut sockets = Vec::new();
    for (addr, role) in addresses(cluster) {
        if held.contains_key(&addr) {
            sockets.push((addr, role, None));
            continue;
        }
        let socket = listener::bind(addr).map_err(|e| format!("bind {addr}: {e}"))?;
        sockets.push((addr, role, Some(socket)));
    }
    Ok(Prepared { runtime, sockets })
}

/// Routes a prepared generation's ports to it. Cannot fail.
fn commit(inner: &mut Inner, prepared: Prepared, tracker: &TaskTracker) {
    let runtime = prepared.runtime;
    let mut addrs = Vec::new();
    for (addr, role, socket) in prepared.sockets {
        let route = Route {
            cluster: Arc::clone(&runtime),
            role,
        };
        match socket {
            Some(socket) => {
                inner
                    .listeners
                    .insert(addr, Listener::start(socket, route, tracker));
            }
            None => {
                if let Some(l) = inner.listeners.get(&addr) {
                    l.set_route(route);
                }
            }
        }
        addrs.push(addr);
    }
    let name = runtime.name().to_owned();
    tracing::info!(cluster = %name, generation = runtime.generation, listeners = addrs.len(), "virtual cluster accepting");
    inner.clusters.insert(
        name,
        Generation {
            generation: runtime.generation,
            runtime: Some(runtime),
            state: transition(State::Initializing, Event::Committed),
            since: SystemTime::now(),
            reason: None,
            listeners: addrs,
        },
    );
}
