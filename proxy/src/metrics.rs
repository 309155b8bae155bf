//! Prometheus metrics. One [`Metrics`] per process owns the registry; each
//! virtual cluster gets a [`ClusterMetrics`] with its label values resolved
//! once, so the data path only bumps atomics. The process-wide buffer budget
//! lives here too, beside the gauges that show it: it is as much one per
//! process as the registry, and every generation is handed both.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use sluice_kafka::policy::TopicIds;

use crate::budget::Budget;
use crate::quota::Quotas;
use crate::signals::Signals;

/// `cluster` label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClusterLabel {
    /// Virtual cluster name.
    pub cluster: String,
}

/// `cluster` and `api` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ApiLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// Kafka API name, e.g. `Metadata`.
    pub api: String,
}

/// `cluster` and `direction` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct DirectionLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// `to_upstream` or `to_client`.
    pub direction: &'static str,
}

/// `cluster` and `reason` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ReasonLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// Why, e.g. `too_large`.
    pub reason: &'static str,
}

/// `cluster` and `operation` labels (a topic policy's operations: a
/// fixed set).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct OperationLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// The operation, e.g. `produce`.
    pub operation: &'static str,
}

/// Every metric family of the data plane.
#[derive(Debug, Default, Clone)]
struct Families {
    connections_active: Family<ClusterLabel, Gauge>,
    connections_total: Family<ClusterLabel, Counter>,
    connections_rejected: Family<ReasonLabels, Counter>,
    bytes: Family<DirectionLabels, Counter>,
    spliced: Family<DirectionLabels, Counter>,
    requests: Family<ApiLabels, Counter>,
    rewrites: Family<ApiLabels, Counter>,
    denied: Family<ApiLabels, Counter>,
    policy_denied: Family<OperationLabels, Counter>,
    upstream_connect_failures: Family<ClusterLabel, Counter>,
    connections_closed_on_error: Family<ReasonLabels, Counter>,
    unknown_nodes: Family<ClusterLabel, Counter>,
    drained: Family<ResultLabels, Counter>,
    broker_lookups: Family<ResultLabels, Counter>,
    sni_unrouted: Family<UnroutedLabel, Counter>,
}

/// `reason` label of connections the SNI port could not route.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct UnroutedLabel {
    /// `unknown` (a server name no cluster has) or `missing` (none, or no TLS).
    pub reason: &'static str,
}

/// Counts connections the shared SNI port closed because no cluster has
/// their server name.
#[derive(Debug, Clone)]
pub(crate) struct SniUnrouted(Family<UnroutedLabel, Counter>);

impl SniUnrouted {
    /// Counts one (`reason`: `unknown` or `missing`).
    pub(crate) fn inc(&self, reason: &'static str) {
        let label = UnroutedLabel { reason };
        self.0.get_or_create(&label).inc();
    }
}

/// `cluster` and `result` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ResultLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// The outcome.
    pub result: &'static str,
}

/// The process's metrics registry.
#[derive(Debug)]
pub struct Metrics {
    registry: std::sync::Mutex<Registry>,
    families: Families,
    budget: Arc<Budget>,
    signals: Arc<Signals>,
    quotas: Arc<Quotas>,
    /// Each virtual cluster's topic ids to names, by cluster name.
    topic_ids: std::sync::Mutex<HashMap<String, Arc<TopicIds>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry with every data-plane family registered.
    pub fn new() -> Self {
        let families = Families::default();
        let mut r = Registry::with_prefix("sluice");
        families.register(&mut r);
        let budget = crate::budget::register(&mut r);
        let signals = Signals::default();
        signals.register(&mut r);
        let quotas = Quotas::default();
        quotas.register(&mut r);
        Metrics {
            registry: std::sync::Mutex::new(r),
            families,
            budget: Arc::new(budget),
            signals: Arc::new(signals),
            quotas: Arc::new(quotas),
            topic_ids: std::sync::Mutex::default(),
        }
    }

    /// Sets `limits.maxBufferedBytes` from the configuration the process
    /// starts with. Later calls change nothing: a new value takes effect at
    /// the next start.
    pub fn configure_buffers_at_start(&self, max_buffered_bytes: u64) {
        self.budget.configure_at_start(max_buffered_bytes);
    }

    /// Applies a reloaded `limits.maxBufferedBytes` at once: a higher limit
    /// wakes paused readers, a lower one pauses reads until usage falls
    /// below it.
    pub fn set_buffer_limit(&self, max_buffered_bytes: u64) {
        self.budget.set_limit(max_buffered_bytes);
    }

    /// The counter of connections SNI ports could not route.
    pub(crate) fn sni_unrouted(&self) -> SniUnrouted {
        SniUnrouted(self.families.sni_unrouted.clone())
    }

    /// The process-wide budget of buffered bytes.
    pub(crate) fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }

    /// The client signals of every virtual cluster, by name: one registry
    /// per process, like this one, so the counts outlive generations.
    pub fn signals(&self) -> &Arc<Signals> {
        &self.signals
    }

    /// The quota usage of every virtual cluster, by name: like the
    /// signals, it outlives generations and filter chains.
    pub(crate) fn quotas(&self) -> &Arc<Quotas> {
        &self.quotas
    }

    /// The topic ids cluster `name`'s Metadata responses taught, made at
    /// its first generation and shared by every later one (like the quota
    /// usage, it outlives generations and filter chains).
    pub(crate) fn topic_ids(&self, name: &str) -> Arc<TopicIds> {
        let mut all = self
            .topic_ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(all.entry(name.to_owned()).or_default())
    }

    /// Registers more metrics (the admin API and reload engine add theirs).
    pub fn register(
        &self,
        name: &str,
        help: &str,
        metric: impl prometheus_client::registry::Metric,
    ) {
        self.registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .register(name, help, metric);
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }

    /// Handles for one virtual cluster.
    pub fn cluster(self: &Arc<Self>, name: &str) -> ClusterMetrics {
        let label = ClusterLabel {
            cluster: name.to_owned(),
        };
        let f = &self.families;
        let direction = |direction| DirectionLabels {
            cluster: name.to_owned(),
            direction,
        };
        // At 0 from the start, so that an alert on its increase sees the
        // first refused connection too.
        for reason in ["max_connections", "connection_rate"] {
            f.connections_rejected.get_or_create_owned(&ReasonLabels {
                cluster: name.to_owned(),
                reason,
            });
        }
        ClusterMetrics {
            name: name.to_owned(),
            families: f.clone(),
            connections_active: f.connections_active.get_or_create_owned(&label),
            connections_total: f.connections_total.get_or_create_owned(&label),
            bytes_to_upstream: f.bytes.get_or_create_owned(&direction("to_upstream")),
            bytes_to_client: f.bytes.get_or_create_owned(&direction("to_client")),
            spliced_to_upstream: f.spliced.get_or_create_owned(&direction("to_upstream")),
            spliced_to_client: f.spliced.get_or_create_owned(&direction("to_client")),
            upstream_connect_failures: f.upstream_connect_failures.get_or_create_owned(&label),
            unknown_nodes: f.unknown_nodes.get_or_create_owned(&label),
        }
    }
}

/// One virtual cluster's metrics.
#[derive(Debug, Clone)]
pub struct ClusterMetrics {
    name: String,
    families: Families,
    /// Client connections open now, in every generation of the cluster (one
    /// series per cluster name, which every generation shares): the count
    /// `limits.maxConnections` is enforced on, see
    /// [`ClusterMetrics::open_connection`].
    pub connections_active: Gauge,
    /// Client connections accepted.
    pub connections_total: Counter,
    /// Bytes from clients to the upstream.
    pub bytes_to_upstream: Counter,
    /// Bytes from the upstream to clients.
    pub bytes_to_client: Counter,
    /// Of `bytes_to_upstream`, those spliced.
    pub spliced_to_upstream: Counter,
    /// Of `bytes_to_client`, those spliced.
    pub spliced_to_client: Counter,
    /// Failed upstream connection attempts.
    pub upstream_connect_failures: Counter,
    /// Node ids outside the port range.
    pub unknown_nodes: Counter,
}

impl ClusterMetrics {
    /// Counts a connection in, unless `max` are open across the cluster's
    /// generations already: a draining generation's connections count
    /// against the new one's limit. Undone by `connections_active.dec()`.
    pub fn open_connection(&self, max: u32) -> bool {
        self.connections_active
            .inner()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < i64::from(max)).then_some(n + 1)
            })
            .is_ok()
    }

    fn api(&self, api: &str) -> ApiLabels {
        ApiLabels {
            cluster: self.name.clone(),
            api: api.to_owned(),
        }
    }

    /// Counts a broker lookup (`result`: ok, failed, cached_failure, shared).
    pub(crate) fn broker_lookup(&self, result: &'static str) {
        let cluster = self.name.clone();
        let label = ResultLabels { cluster, result };
        self.families.broker_lookups.get_or_create(&label).inc();
    }

    /// Counts a request of `api`.
    pub fn request(&self, api: &str) {
        self.families.requests.get_or_create(&self.api(api)).inc();
    }

    /// Counts a rewritten response of `api`.
    pub fn rewrite(&self, api: &str) {
        self.families.rewrites.get_or_create(&self.api(api)).inc();
    }

    /// Counts a request of `api` denied by a filter.
    pub fn denied(&self, api: &str) {
        self.families.denied.get_or_create(&self.api(api)).inc();
    }

    /// Counts `topics` topics a topic policy refused `operation` on.
    pub(crate) fn policy_denied(&self, operation: &'static str, topics: usize) {
        let labels = OperationLabels {
            cluster: self.name.clone(),
            operation,
        };
        let family = &self.families.policy_denied;
        family.get_or_create(&labels).inc_by(topics as u64);
    }

    /// Counts a connection refused at once.
    pub fn rejected(&self, reason: &'static str) {
        let labels = ReasonLabels {
            cluster: self.name.clone(),
            reason,
        };
        self.families
            .connections_rejected
            .get_or_create(&labels)
            .inc();
    }

    /// Counts a connection of a draining generation that ended.
    pub fn drained(&self, forced: bool) {
        let labels = ResultLabels {
            cluster: self.name.clone(),
            result: if forced { "forced" } else { "clean" },
        };
        self.families.drained.get_or_create(&labels).inc();
    }

    /// Counts a connection closed because of a protocol error.
    pub fn closed_on_error(&self, reason: &'static str) {
        let labels = ReasonLabels {
            cluster: self.name.clone(),
            reason,
        };
        self.families
            .connections_closed_on_error
            .get_or_create(&labels)
            .inc();
    }
}

impl Families {
    /// Registers every family of the data plane in `r`.
    fn register(&self, r: &mut Registry) {
        r.register(
            "connections_active",
            "Client connections open now",
            self.connections_active.clone(),
        );
        r.register(
            "connections",
            "Client connections accepted",
            self.connections_total.clone(),
        );
        r.register(
            "connections_rejected",
            "Client connections closed at once (reason: max_connections, connection_rate: over the quota filter's connectionsPerSecond, no_route)",
            self.connections_rejected.clone(),
        );
        r.register(
            "bytes",
            "Bytes forwarded (direction: to_upstream, to_client)",
            self.bytes.clone(),
        );
        r.register(
            "spliced_bytes",
            "Bytes of sluice_bytes_total moved by splice(2) between two plaintext sockets, never copied into the proxy (direction: to_upstream, to_client)",
            self.spliced.clone(),
        );
        r.register(
            "requests",
            "Requests received from clients, by Kafka API",
            self.requests.clone(),
        );
        r.register(
            "rewrites",
            "Responses whose broker addresses were rewritten",
            self.rewrites.clone(),
        );
        r.register(
            "denied_requests",
            "Requests answered by a filter with an error",
            self.denied.clone(),
        );
        r.register(
            "policy_denied",
            "Topics a topic policy refused, one per topic of each request (operation: produce, consume, describe, create, delete, alter, describe-configs, alter-configs); never counted as errors in the client signals",
            self.policy_denied.clone(),
        );
        r.register(
            "upstream_connect_failures",
            "Failed attempts to connect to an upstream broker",
            self.upstream_connect_failures.clone(),
        );
        r.register(
            "connections_closed_on_error",
            "Connections closed because of a protocol error (reason: too_large, malformed, frame_timeout, write_timeout, rewrite, upstream, upstream_auth: the upstream refused the proxy's own lookup for want of SASL)",
            self.connections_closed_on_error.clone(),
        );
        r.register(
            "unknown_nodes",
            "Upstream node ids seen outside the cluster's broker port range",
            self.unknown_nodes.clone(),
        );
        r.register(
            "drained_connections",
            "Connections of draining generations that ended (result: clean at a request boundary, forced at drainTimeout)",
            self.drained.clone(),
        );
        r.register(
            "broker_lookups",
            "The proxy's own lookups of a cluster's brokers, for connections to broker ports of nodes it does not know yet (result: ok, failed, cached_failure: failed at once from a failure remembered for 1 s, shared: the outcome of another connection's lookup in flight)",
            self.broker_lookups.clone(),
        );
        r.register(
            "sni_unrouted_connections",
            "Connections on an SNI port closed because no cluster has their TLS server name (reason: unknown, missing: none sent or not TLS)",
            self.sni_unrouted.clone(),
        );
        for reason in ["unknown", "missing"] {
            self.sni_unrouted
                .get_or_create_owned(&UnroutedLabel { reason });
        }
    }
}
