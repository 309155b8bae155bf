//! Prepare (fallible: build a generation, bind new ports) and commit
//! (infallible: route the ports to it).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use tokio::net::TcpListener;
use tokio_util::task::TaskTracker;

use super::{Generation, Inner};
use crate::config::model::{Routing, VirtualCluster};
use crate::dataplane::cluster::ClusterRuntime;
use crate::dataplane::connection::Role;
use crate::dataplane::listener::{self, Closing, Listener, Route, Routes};
use crate::dataplane::sni::SniTable;
use crate::events::Events;
use crate::lifecycle::{Event, Lifecycle};
use crate::metrics::Metrics;
use sluice_admin_api::ClusterState;

/// A generation built and its new sockets bound, not yet routed.
pub(super) struct Prepared {
    pub(super) runtime: Arc<ClusterRuntime>,
    /// Each address with its role (`None`: the shared SNI port), and a
    /// fresh socket unless the address is already held by a listener (which
    /// is then handed over, never re-bound).
    sockets: Vec<(SocketAddr, Option<Role>, Option<TcpListener>)>,
}

/// Every address a cluster listens on, with what each leads to (`None`:
/// the shared SNI port, where the server name decides).
pub(super) fn addresses(cluster: &VirtualCluster) -> Vec<(SocketAddr, Option<Role>)> {
    let g = &cluster.gateway;
    let p = match &g.routing {
        Routing::Sni(sni) => return vec![(SocketAddr::new(g.listen_host, sni.port.get()), None)],
        Routing::Ports(p) => p,
    };
    let mut out = vec![(
        SocketAddr::new(g.listen_host, p.bootstrap_port.get()),
        Some(Role::Bootstrap),
    )];
    for (port, node) in p.broker_ports.pairs() {
        out.push((
            SocketAddr::new(g.listen_host, port),
            Some(Role::Broker(node)),
        ));
    }
    out
}

/// Builds a generation and binds the ports not already held. On failure
/// everything bound here is closed again (the sockets are dropped).
fn prepare(
    cluster: &VirtualCluster,
    generation: u64,
    metrics: &Arc<Metrics>,
    events: &Events,
    held: &HashSet<SocketAddr>,
) -> Result<Prepared, String> {
    events.transition(
        cluster.name.as_str(),
        generation,
        None,
        ClusterState::Initializing,
        None,
    );
    let gauge = events.generation_gauge(cluster.name.as_str(), generation);
    let runtime =
        ClusterRuntime::prepare(cluster, generation, metrics, gauge).map_err(|e| e.to_string())?;
    let mut sockets = Vec::new();
    for (addr, role) in addresses(cluster) {
        if held.contains(&addr) {
            sockets.push((addr, role, None));
            continue;
        }
        let socket = listener::bind(addr).map_err(|e| format!("bind {addr}: {e}"))?;
        sockets.push((addr, role, Some(socket)));
    }
    Ok(Prepared { runtime, sockets })
}

/// A cluster whose new generation failed to prepare.
pub(super) struct Failure {
    /// The cluster's name.
    pub(super) name: String,
    /// The generation number it was given.
    pub(super) generation: u64,
    /// Why it failed.
    pub(super) why: String,
}

/// The one prepare loop of startup and reload: prepares a new generation of
/// each cluster in order, numbering them from `numbers`, and hands each
/// failure to `failed`, which says whether to go on or stop. `held` is every
/// address a listener already holds (handed over, never re-bound). Takes no
/// lock: admin reads never wait for it. Returns the generations prepared.
pub(super) fn prepare_each<'a>(
    held: &HashSet<SocketAddr>,
    numbers: &AtomicU64,
    clusters: impl IntoIterator<Item = &'a VirtualCluster>,
    metrics: &Arc<Metrics>,
    events: &Events,
    mut failed: impl FnMut(Failure) -> ControlFlow<()>,
) -> Vec<Prepared> {
    let mut prepared = Vec::new();
    // SNI clusters new in this batch share the socket the first one binds.
    let mut held = held.clone();
    for cluster in clusters {
        let generation = numbers.fetch_add(1, Ordering::Relaxed);
        match prepare(cluster, generation, metrics, events, &held) {
            Ok(p) => {
                held.extend(p.sockets.iter().filter(|s| s.2.is_some()).map(|s| s.0));
                prepared.push(p);
            }
            Err(why) => {
                let failure = Failure {
                    name: cluster.name.to_string(),
                    generation,
                    why,
                };
                if failed(failure).is_break() {
                    break;
                }
            }
        }
    }
    prepared
}

/// Routes a prepared generation's ports to it and makes it the cluster's
/// current generation. Cannot fail. Returns the generation it replaces.
pub(super) fn commit(
    inner: &mut Inner,
    prepared: Prepared,
    tracker: &TaskTracker,
    events: &Events,
    metrics: &Metrics,
) -> Option<Generation> {
    let runtime = prepared.runtime;
    let name = runtime.name().to_owned();
    if let Some(old) = inner.clusters.get(&name).and_then(|g| g.runtime.as_ref()) {
        runtime.inherit_nodes(old);
    }
    // The usage gauge measures against the quota in force from now on (not
    // one a reload prepared and then gave up).
    runtime.quota.configure(runtime.filters().quota);
    let mut addrs = Vec::new();
    for (addr, role, socket) in prepared.sockets {
        // An SNI port's table is built once every generation is in place
        // ([`route_sni`]); connections accepted before wait for it.
        let routes = match role {
            Some(role) => Routes::Port(Route {
                cluster: Arc::clone(&runtime),
                role,
            }),
            None => Routes::Sni(None),
        };
        match (socket, &routes) {
            (Some(socket), _) => {
                let unrouted = metrics.sni_unrouted();
                let hold = inner.hold.clone();
                let listener = Listener::start(socket, routes, tracker, unrouted, hold);
                inner.listeners.insert(addr, listener);
            }
            (None, Routes::Port(_)) => {
                if let Some(l) = inner.listeners.get(&addr) {
                    l.set_routes(routes);
                }
            }
            (None, Routes::Sni(_)) => {}
        }
        addrs.push(addr);
    }
    let state = transition(ClusterState::Initializing, Event::Committed);
    events.transition(
        &name,
        runtime.generation,
        Some(ClusterState::Initializing),
        state,
        None,
    );
    let generation = Generation {
        generation: runtime.generation,
        runtime: Some(runtime),
        state,
        since: SystemTime::now(),
        reason: None,
        listeners: addrs,
    };
    inner.clusters.insert(name, generation)
}

/// Points every SNI port at a new table of the current generations routed
/// by SNI on it. Called after each commit of a startup or reload (under the
/// same lock), once removed clusters are gone: an unchanged cluster's
/// entries lead to the same generation as before.
pub(super) fn route_sni(inner: &Inner) {
    let mut by_addr: HashMap<SocketAddr, Vec<&Arc<ClusterRuntime>>> = HashMap::new();
    for g in inner.clusters.values() {
        let Some(runtime) = &g.runtime else { continue };
        let Some(sni) = runtime.config.gateway.sni() else {
            continue;
        };
        let addr = SocketAddr::new(runtime.config.gateway.listen_host, sni.port.get());
        by_addr.entry(addr).or_default().push(runtime);
    }
    for (addr, runtimes) in by_addr {
        if let Some(listener) = inner.listeners.get(&addr) {
            let table = SniTable::new(runtimes);
            tracing::debug!(listener = %addr, clusters = table.len(), "SNI routes swapped");
            listener.set_routes(Routes::Sni(Some(Arc::new(table))));
        }
    }
}

/// Every address a listener holds now.
pub(super) fn held(inner: &Inner) -> HashSet<SocketAddr> {
    inner.listeners.keys().copied().collect()
}

/// Records a generation that failed to prepare (or was released because
/// another failed).
pub(super) fn failed(name: &str, generation: u64, reason: String, events: &Events) -> Generation {
    let state = transition(ClusterState::Initializing, Event::PrepareFailed);
    events.transition(
        name,
        generation,
        Some(ClusterState::Initializing),
        state,
        Some(&reason),
    );
    Generation {
        runtime: None,
        generation,
        state,
        since: SystemTime::now(),
        reason: Some(reason),
        listeners: Vec::new(),
    }
}

/// Records a generation that failed to prepare in a reload that changes
/// nothing: logged and counted like any failure, then forgotten, since no
/// cluster keeps it (its metric series go with it).
pub(super) fn discarded(name: &str, generation: u64, reason: String, events: &Events) {
    let record = failed(name, generation, reason, events);
    events.forget(name, generation, record.state);
}

/// Closes every listener no current generation uses. Connections accepted on
/// them are untouched (they drain with their generation). Wait on the result
/// (outside the lock) for the ports to be free again.
pub(super) fn release_unused(inner: &mut Inner) -> Vec<Closing> {
    let used: HashSet<SocketAddr> = inner
        .clusters
        .values()
        .filter(|g| g.runtime.is_some())
        .flat_map(|g| g.listeners.iter().copied())
        .collect();
    let unused: Vec<SocketAddr> = inner
        .listeners
        .keys()
        .filter(|addr| !used.contains(addr))
        .copied()
        .collect();
    unused
        .into_iter()
        .filter_map(|addr| inner.listeners.remove(&addr))
        .map(Listener::close)
        .collect()
}

/// Applies a lifecycle event; an invalid one is a bug, logged, state kept.
pub(super) fn transition(from: ClusterState, event: Event) -> ClusterState {
    match from.on(event) {
        Ok(to) => to,
        Err(e) => {
            tracing::error!(error = %e, "lifecycle bug");
            from
        }
    }
}
