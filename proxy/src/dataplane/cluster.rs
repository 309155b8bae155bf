//! One generation of a virtual cluster at run time: its configuration, TLS,
//! filters, metrics, the upstream nodes it has learned, and its connections.
//! Everything here is built in `prepare` before any traffic is routed to it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use sluice_kafka::rewrite::{Advertised, Learned, REWRITTEN_APIS};
use tokio_rustls::{TlsAcceptor, TlsConnector};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::lookup::Lookups;
use super::tls::{self, TlsError};
use crate::budget::Budget;
use crate::config::model::{Routing, VirtualCluster};
use crate::config::sasl::UpstreamSasl;
use crate::config::types::HostPort;
use crate::filter::Filter;
use crate::metrics::{ClusterMetrics, Metrics};
use crate::signals::{ClusterSignals, Shared};

/// An upstream node's address as the upstream cluster announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeAddr {
    /// Host name or IP.
    pub host: String,
    /// Port.
    pub port: u16,
}

/// A generation's TLS (what it accepts clients with, and connects to the
/// brokers with) and the proxy's own SASL credentials: the material a
/// reload swaps into a running generation when only referenced files change.
#[derive(Clone, Default)]
pub(crate) struct Tls {
    acceptor: Option<TlsAcceptor>,
    connector: Option<TlsConnector>,
    sasl: Option<UpstreamSasl>,
}

impl Tls {
    /// Built from a cluster's loaded material: fails on material rustls
    /// refuses, before anything running is touched.
    pub(crate) fn of(config: &VirtualCluster) -> Result<Tls, TlsError> {
        let acceptor = match &config.gateway.tls {
            Some(t) => Some(tls::acceptor(&t.material.0)?),
            None => None,
        };
        let connector = match &config.upstream.tls {
            Some(t) => Some(tls::connector(&t.material.0)?),
            None => None,
        };
        Ok(Tls {
            acceptor,
            connector,
            sasl: config.upstream.sasl.clone(),
        })
    }
}

/// A running generation of a virtual cluster.
pub(crate) struct ClusterRuntime {
    /// The cluster's configuration.
    pub config: VirtualCluster,
    /// Increases with every reload that touches the cluster.
    pub generation: u64,
    /// TLS for clients and towards the brokers, when configured; swapped in
    /// place when only the material changes (see [`ClusterRuntime::rotate`]).
    tls: RwLock<Tls>,
    /// What clients are told in broker addresses.
    pub advertised: Advertised,
    /// Filters applied to every request, in order.
    pub filters: Vec<Arc<dyn Filter>>,
    /// This cluster's metrics.
    pub metrics: ClusterMetrics,
    /// The cluster's client signals, shared with its other generations.
    pub(crate) signals: Arc<ClusterSignals>,
    /// The process-wide budget of buffered bytes.
    budget: Arc<Budget>,
    /// API keys whose responses or requests the proxy decodes, so their
    /// versions are capped in ApiVersions.
    decoded: HashSet<i16>,
    nodes: RwLock<HashMap<i32, NodeAddr>>,
    /// The proxy's own lookups of the brokers: one in flight, failures
    /// remembered for a second.
    pub(crate) lookups: Lookups,
    warned: Mutex<HashSet<i32>>,
    /// Connections open in this generation (the limit counts the cluster's,
    /// across generations: `metrics.connections_active`).
    active: AtomicUsize,
    next_bootstrap: AtomicUsize,
    /// This generation's connections, so a drain knows when the last one ends.
    pub connections: TaskTracker,
    /// Cancelled when the generation starts draining.
    pub drain: CancellationToken,
    /// Cancelled at the drain deadline: remaining connections close at once.
    pub force: CancellationToken,
    /// Window over which draining connections spread their closes, in ms.
    drain_spread_ms: AtomicU64,
    /// Open connections of this generation, exported per generation.
    generation_gauge: Gauge,
}

impl std::fmt::Debug for ClusterRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterRuntime")
            .field("name", &self.config.name)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl ClusterRuntime {
    /// Builds everything a generation needs except its listeners.
    pub(crate) fn prepare(
        config: &VirtualCluster,
        generation: u64,
        metrics: &Arc<Metrics>,
        generation_gauge: Gauge,
    ) -> Result<Arc<Self>, TlsError> {
        let tls = Tls::of(config)?;
        let mut decoded: HashSet<i16> = REWRITTEN_APIS.iter().map(|k| *k as i16).collect();
        for filter in &config.filters {
            decoded.extend(filter.decoded_apis());
        }
        decoded.insert(kafka_protocol::messages::ApiKey::ApiVersions as i16);
        let name = config.name.as_str();
        let cluster_metrics = metrics.cluster(name);
        let shared = Shared {
            connections: cluster_metrics.connections_total.clone(),
            upstream_connect_failures: cluster_metrics.upstream_connect_failures.clone(),
            unknown_nodes: cluster_metrics.unknown_nodes.clone(),
        };
        let signals = metrics.signals().cluster(name, &shared);
        Ok(Arc::new(ClusterRuntime {
            advertised: match &config.gateway.routing {
                Routing::Ports(p) => {
                    Advertised::new(&p.advertised_host.to_string(), p.broker_ports)
                }
                Routing::Sni(s) => Advertised::sni(s.broker_host_pattern.clone(), s.port.get()),
            },
            filters: config.filters.iter().map(crate::filter::build).collect(),
            metrics: cluster_metrics,
            signals,
            budget: Arc::clone(metrics.budget()),
            config: config.clone(),
            generation,
            tls: RwLock::new(tls),
            decoded,
            nodes: RwLock::new(HashMap::new()),
            lookups: Lookups::default(),
            warned: Mutex::new(HashSet::new()),
            active: AtomicUsize::new(0),
            next_bootstrap: AtomicUsize::new(0),
            connections: TaskTracker::new(),
            drain: CancellationToken::new(),
            force: CancellationToken::new(),
            drain_spread_ms: AtomicU64::new(0),
            generation_gauge,
        }))
    }

    /// The acceptor new client connections use now.
    pub(crate) fn acceptor(&self) -> Option<TlsAcceptor> {
        self.tls
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .acceptor
            .clone()
    }

    /// The connector new upstream connections use now.
    pub(crate) fn connector(&self) -> Option<TlsConnector> {
        self.tls
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .connector
            .clone()
    }

    /// The proxy's own SASL credentials now (`upstream.sasl`).
    pub(crate) fn sasl(&self) -> Option<UpstreamSasl> {
        self.tls
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .sasl
            .clone()
    }

    /// Swaps in new TLS material and SASL credentials: new handshakes and
    /// lookups use them, connections made before keep theirs. The
    /// generation stays the same.
    pub(crate) fn rotate(&self, tls: Tls) {
        *self
            .tls
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = tls;
        // A failure remembered was with the old material.
        self.lookups.forget();
    }

    /// Starts from what an earlier generation learned about the same
    /// upstream, so its clients' broker connections need no lookup.
    pub(crate) fn inherit_nodes(&self, earlier: &ClusterRuntime) {
        if earlier.config.upstream != self.config.upstream {
            return;
        }
        let known = earlier
            .nodes
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        *self
            .nodes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = known;
    }

    /// Tells every connection to finish: each stops taking requests at a
    /// random moment within `spread`, so clients do not all reconnect at once,
    /// and closes once its in-flight requests are answered.
    pub(crate) fn begin_drain(&self, spread: Duration) {
        let ms = u64::try_from(spread.as_millis()).unwrap_or(u64::MAX);
        self.drain_spread_ms.store(ms, Ordering::Release);
        self.connections.close();
        self.drain.cancel();
    }

    /// The window draining connections spread their closes over.
    pub(crate) fn drain_spread(&self) -> Duration {
        Duration::from_millis(self.drain_spread_ms.load(Ordering::Acquire))
    }

    /// The cluster's name.
    pub(crate) fn name(&self) -> &str {
        self.config.name.as_str()
    }

    /// Whether the proxy decodes this API, so ApiVersions must cap it.
    pub(crate) fn decodes(&self, api_key: i16) -> bool {
        self.decoded.contains(&api_key)
    }

    /// The process-wide budget of buffered bytes.
    pub(crate) fn budget(&self) -> Arc<Budget> {
        Arc::clone(&self.budget)
    }

    /// Admits one more connection unless `limits.maxConnections` are open
    /// in the cluster, counting those of its older generations still
    /// draining.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Admitted> {
        if !self
            .metrics
            .open_connection(self.config.limits.max_connections)
        {
            self.metrics.rejected("max_connections");
            return None;
        }
        self.active.fetch_add(1, Ordering::AcqRel);
        self.metrics.connections_total.inc();
        self.generation_gauge.inc();
        Some(Admitted(Arc::clone(self)))
    }

    /// Connections of this generation open now.
    pub(crate) fn active_connections(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// Records upstream node addresses seen in a response.
    pub(crate) fn learn(&self, learned: &[Learned]) {
        let fresh: Vec<(i32, NodeAddr)> = {
            let nodes = self
                .nodes
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            learned
                .iter()
                .filter_map(|l| {
                    let addr = NodeAddr {
                        host: l.host.clone(),
                        port: u16::try_from(l.port).ok()?,
                    };
                    (nodes.get(&l.node_id) != Some(&addr)).then_some((l.node_id, addr))
                })
                .collect()
        };
        if fresh.is_empty() {
            return;
        }
        let mut nodes = self
            .nodes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (id, addr) in fresh {
            tracing::debug!(cluster = %self.name(), node = id, host = %addr.host, port = addr.port, "upstream node learned");
            nodes.insert(id, addr);
        }
    }

    /// Reports node ids outside the port range, once each per generation.
    pub(crate) fn unmapped(&self, ids: &[i32]) {
        for id in ids {
            self.metrics.unknown_nodes.inc();
            let first = self
                .warned
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(*id);
            if !first {
                continue;
            }
            match self.config.gateway.ports() {
                Some(p) => tracing::warn!(
                    cluster = %self.name(),
                    node = id,
                    first_node_id = p.broker_ports.first_node_id,
                    count = p.broker_ports.count,
                    "upstream node outside the broker port range; hidden from clients"
                ),
                None => tracing::warn!(
                    cluster = %self.name(),
                    node = id,
                    "upstream node with a negative id; hidden from clients"
                ),
            }
        }
    }

    /// Where upstream node `id` lives, if known.
    pub(crate) fn node(&self, id: i32) -> Option<NodeAddr> {
        self.nodes
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
            .cloned()
    }

    /// The bootstrap servers, starting at a different one each call so load
    /// spreads and a dead first server does not slow every connection.
    pub(crate) fn bootstrap_order(&self) -> Vec<&HostPort> {
        let servers = &self.config.upstream.bootstrap_servers;
        let start = self.next_bootstrap.fetch_add(1, Ordering::Relaxed) % servers.len().max(1);
        servers
            .iter()
            .cycle()
            .skip(start)
            .take(servers.len())
            .collect()
    }
}

/// One admitted connection; dropping it frees the slot.
#[derive(Debug)]
pub(crate) struct Admitted(Arc<ClusterRuntime>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::AcqRel);
        self.0.metrics.connections_active.dec();
        self.0.generation_gauge.dec();
    }
}
