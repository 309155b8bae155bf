//! One generation of a virtual cluster at run time: its configuration, TLS,
//! filters, metrics, the upstream nodes it has learned, and its connections.
//! Everything here is built in `prepare` before any traffic is routed to it.

use super::refused::Failures;
use crate::audit::Audit;
use kafka_protocol::messages::ApiVersionsResponse;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use sluice_kafka::policy::TopicIds;
use sluice_kafka::rewrite::{Advertised, Learned};
use tokio_rustls::{TlsAcceptor, TlsConnector};
use tokio_util::task::TaskTracker;

use super::latch::Latch;
use super::live::{Chain, InPlace, LiveChain, LiveLimits, Tls};
use super::lookup::Lookups;
use super::tls::TlsError;
use crate::budget::Budget;
use crate::config::model::{Routing, VirtualCluster};
use crate::config::sasl::UpstreamSasl;
use crate::config::types::HostPort;
use crate::metrics::{ClusterMetrics, Metrics};
use crate::quota::ClusterQuota;
use crate::signals::{ClusterSignals, Shared};

/// An upstream node's address as the upstream cluster announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeAddr {
    /// Host name or IP.
    pub host: String,
    /// Port.
    pub port: u16,
}

mod auth;

/// A running generation of a virtual cluster.
pub(crate) struct ClusterRuntime {
    /// The cluster's configuration as the generation started: its TLS
    /// material and limits may have been swapped in place since (read
    /// those through [`ClusterRuntime::acceptor`], [`ClusterRuntime::limits`]
    /// and their siblings).
    pub config: VirtualCluster,
    /// Increases with every reload that touches the cluster.
    pub generation: u64,
    /// TLS for clients and towards the brokers, when configured; swapped in
    /// place when only the material changes (see [`ClusterRuntime::apply_in_place`]).
    tls: RwLock<Tls>,
    /// `limits` in force: `config.limits` until a reload changes them in
    /// place (read them with [`ClusterRuntime::limits`]).
    limits: LiveLimits,
    /// What clients are told in broker addresses.
    pub advertised: Advertised,
    /// Filters applied to every request, in order; swapped in place by a
    /// reload (read them with [`ClusterRuntime::filters`]).
    filters: LiveChain,
    /// This cluster's metrics.
    pub metrics: ClusterMetrics,
    /// The cluster's client signals, shared with its other generations.
    pub(crate) signals: Arc<ClusterSignals>,
    /// The process-wide budget of buffered bytes.
    budget: Arc<Budget>,
    /// What the quota filter measured of the cluster's clients, shared with
    /// its other generations (the rates in force are in the chain).
    pub(crate) quota: Arc<ClusterQuota>,
    /// Topic ids to names, learned from Metadata responses, for the topic
    /// policy (requests naming topics by id): shared with the cluster's
    /// other generations, so neither a reload nor a policy change resets it.
    pub(crate) topic_ids: Arc<TopicIds>,
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
    /// Set when the generation starts draining.
    pub(crate) drain: Latch,
    /// Set at the drain deadline: remaining connections close at once.
    pub(crate) force: Latch,
    /// Window over which draining connections spread their closes, in ms.
    drain_spread_ms: AtomicU64,
    /// Open connections of this generation, exported per generation.
    generation_gauge: Gauge,
    /// The upstream's ApiVersions, asked once by a client that
    /// authenticates with the proxy (`terminate`) before it has an upstream.
    pub(crate) upstream_versions: tokio::sync::OnceCell<Arc<ApiVersionsResponse>>,
    /// Failed authentications by source address (`terminate`).
    pub(crate) auth_failures: Failures,
    /// The data plane's audit lines, bounded per event.
    pub(crate) audit: Audit,
    /// Bumped when `authentication` changes in place: connections then
    /// check their principal still holds ([`ClusterRuntime::still_knows`]).
    auth_epoch: AtomicU64,
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
            filters: LiveChain::new(super::live::chain(config)),
            quota: metrics.quotas().cluster(name),
            topic_ids: metrics.topic_ids(name),
            metrics: cluster_metrics,
            signals,
            budget: Arc::clone(metrics.budget()),
            config: config.clone(),
            generation,
            tls: RwLock::new(tls),
            limits: LiveLimits::new(config.limits),
            nodes: RwLock::new(HashMap::new()),
            lookups: Lookups::default(),
            warned: Mutex::new(HashSet::new()),
            active: AtomicUsize::new(0),
            next_bootstrap: AtomicUsize::new(0),
            connections: TaskTracker::new(),
            drain: Latch::default(),
            force: Latch::default(),
            drain_spread_ms: AtomicU64::new(0),
            generation_gauge,
            upstream_versions: tokio::sync::OnceCell::new(),
            auth_failures: Failures::default(),
            audit: Audit::default(),
            auth_epoch: AtomicU64::new(0),
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

    /// Swaps in new TLS material, SASL credentials and limits: new
    /// handshakes and lookups use the material (connections made before
    /// keep their sessions), every connection reads the limits again at its
    /// next frame, and admission counts against the new `maxConnections`
    /// (connections over a lowered one stay). The generation stays the same.
    pub(crate) fn apply_in_place(&self, next: InPlace) {
        let mut tls = self
            .tls
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed =
            tls.authentication != next.tls.authentication || tls.client_ca != next.tls.client_ca;
        *tls = next.tls;
        drop(tls);
        if changed {
            self.auth_epoch.fetch_add(1, Ordering::AcqRel);
        }
        self.limits.store(next.limits);
        self.quota.configure(next.filters.quota);
        self.filters.store(next.filters);
        // A failure remembered was with the old material.
        self.lookups.forget();
    }

    /// The filter chain in force now.
    pub(crate) fn filters(&self) -> Chain {
        self.filters.load()
    }

    /// The cluster's `limits` in force now.
    pub(crate) fn limits(&self) -> crate::config::model::Limits {
        self.limits.load()
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
        self.drain.set();
    }

    /// The window draining connections spread their closes over.
    pub(crate) fn drain_spread(&self) -> Duration {
        Duration::from_millis(self.drain_spread_ms.load(Ordering::Acquire))
    }

    /// The cluster's name.
    pub(crate) fn name(&self) -> &str {
        self.config.name.as_str()
    }

    /// Whether ApiVersions must cap this API to the versions the proxy can
    /// decode: every API, since a filter a reload swaps in place may decode
    /// any of them on connections whose versions were agreed before it.
    pub(crate) fn decodes(&self, _api_key: i16) -> bool {
        true
    }

    /// The process-wide budget of buffered bytes.
    pub(crate) fn budget(&self) -> Arc<Budget> {
        Arc::clone(&self.budget)
    }

    /// Admits one more connection unless `limits.maxConnections` are open
    /// in the cluster, counting those of its older generations still
    /// draining.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Admitted> {
        if let Some(spec) = self.filters().quota
            && !self
                .quota
                .admit_connection(&spec, tokio::time::Instant::now())
        {
            self.metrics.rejected("connection_rate");
            return None;
        }
        if !self
            .metrics
            .open_connection(self.limits.load().max_connections)
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
