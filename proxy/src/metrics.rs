//! Prometheus metrics. One [`Metrics`] per process owns the registry; each
//! virtual cluster gets a [`ClusterMetrics`] with its label values resolved
//! once, so the data path only bumps atomics. The process-wide buffer budget
//! lives here too, beside the gauges that show it: it is as much one per
//! process as the registry, and every generation is handed both.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use sluice_kafka::policy::TopicIds;

use crate::budget::Budget;
use crate::quota::Quotas;
use crate::signals::Signals;

mod client_errors;
mod families;
mod labels;
mod per_api;
mod per_cluster;
mod principals;
mod sessions;

pub(crate) use client_errors::ClientCause;
use client_errors::WarnLimiter;
use families::Families;
pub use labels::{
    ApiLabels, CauseLabels, ClusterLabel, DirectionLabels, OperationLabels, ReasonLabels,
    ResultLabels, UnroutedLabel,
};
use per_api::PerApi;
use principals::PrincipalLabels;
pub(crate) use sessions::{FetchSessions, Judged, Rules, who};

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
    /// Each virtual cluster's fetch sessions, by cluster name.
    fetch_sessions: per_cluster::PerCluster<FetchSessions>,
    /// Each virtual cluster's warnings about its clients, by cluster name.
    client_warnings: per_cluster::PerCluster<WarnLimiter>,
    /// Each virtual cluster's principals with a label of their own.
    principal_labels: per_cluster::PerCluster<PrincipalLabels>,
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
            fetch_sessions: per_cluster::PerCluster::default(),
            client_warnings: per_cluster::PerCluster::default(),
            principal_labels: per_cluster::PerCluster::default(),
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
        for cause in ClientCause::ALL {
            f.client_errors.get_or_create_owned(&CauseLabels {
                cluster: name.to_owned(),
                cause: cause.as_str(),
            });
        }
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
            requests: Arc::new(PerApi::default()),
            fetch_sessions: self.fetch_sessions.cluster(name),
            client_warnings: self.client_warnings.cluster(name),
            principal_labels: self.principal_labels.cluster(name),
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
    /// `sluice_requests_total`'s series of this cluster, by API key.
    requests: Arc<PerApi>,
    /// The cluster's fetch sessions, shared with its other generations.
    pub(crate) fetch_sessions: Arc<FetchSessions>,
    /// When the cluster last warned about its clients, by cause.
    client_warnings: Arc<WarnLimiter>,
    /// The principals it labels by name (`principals`).
    principal_labels: Arc<PrincipalLabels>,
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

    /// Counts a request of API `key`.
    pub fn request(&self, key: i16) {
        let family = &self.families.requests;
        let counter = self
            .requests
            .get(key, |api| family.get_or_create_owned(&self.api(api)));
        counter.inc();
    }

    /// Counts a rewritten response of `api`.
    pub fn rewrite(&self, api: &str) {
        self.families.rewrites.get_or_create(&self.api(api)).inc();
    }

    /// Counts a request of `api` denied by a filter.
    pub fn denied(&self, api: &str) {
        self.families.denied.get_or_create(&self.api(api)).inc();
    }

    /// Counts `topics` topics a topic policy refused `operation` on, by
    /// the deciding `rule` (see [`OperationLabels::rule`]).
    pub(crate) fn policy_denied(
        &self,
        operation: &'static str,
        rule: String,
        principal: Option<&str>,
        topics: usize,
    ) {
        let labels = OperationLabels {
            cluster: self.name.clone(),
            operation,
            rule,
            principal: self.principal_labels.label(principal),
        };
        let family = &self.families.policy_denied;
        family.get_or_create(&labels).inc_by(topics as u64);
    }

    /// Counts an incremental Fetch answered with the session error after a
    /// change of the consume rules (`dataplane::requests::sessions`).
    pub(crate) fn fetch_session_reset(&self) {
        let label = ClusterLabel {
            cluster: self.name.clone(),
        };
        self.families
            .fetch_sessions_reset
            .get_or_create(&label)
            .inc();
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

    /// Counts an error a client caused; whether to warn about it:
    /// `Some(n)`, `n` being the warnings of that cause not logged since the
    /// last one (at most one per cause per 10 s per cluster).
    pub(crate) fn client_error(&self, cause: ClientCause) -> Option<u64> {
        let labels = CauseLabels {
            cluster: self.name.clone(),
            cause: cause.as_str(),
        };
        self.families.client_errors.get_or_create(&labels).inc();
        self.client_warnings
            .admit(cause, tokio::time::Instant::now())
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
