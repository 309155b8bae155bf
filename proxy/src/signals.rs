//! Client signals: what the data plane counts of each virtual cluster's
//! clients, read as a [`ClientSignals`] snapshot to judge a version by
//! (see `docs/client-signals.md`).
//!
//! - [`Signals`]: the process's registry, one per [`Metrics`] (and so one
//!   per process), reached with [`Metrics::signals`]; it holds each
//!   cluster's counters by cluster *name*, so they outlive the cluster's
//!   generations: a reload that restarts a cluster goes on counting in the
//!   same counters, cumulative since the process started.
//! - `names`: the bounded vocabularies (close reasons, decoded APIs, Kafka
//!   error names)
//! - `bootstrap`: clients told the brokers on the bootstrap port that never
//!   reached one (a bounded table)
//! - `judge`: the rule that turns two windows of signals into findings
//!
//! The data path only bumps atomics: a generation holds its cluster's
//! [`ClusterSignals`] from `prepare` on.
//!
//! [`Metrics`]: crate::metrics::Metrics
//! [`Metrics::signals`]: crate::metrics::Metrics::signals

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
pub use sluice_admin_api::analysis::ClientSignals;

mod bootstrap;
mod judge;
mod names;
#[cfg(test)]
mod tests;

pub use judge::{Thresholds, judge, since};
pub(crate) use names::{CloseReason, DecodedApi};

/// `cluster`, `api` and `error` labels of `sluice_response_errors_total`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ResponseErrorLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// Kafka API name, e.g. `Metadata`.
    pub api: &'static str,
    /// Kafka error name, e.g. `UNKNOWN_TOPIC_OR_PARTITION`, or `OTHER`.
    pub error: &'static str,
}

/// The counters a cluster's signals share with its metrics (the same
/// series, not counted twice).
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    /// Client connections accepted (`sluice_connections_total`).
    pub(crate) connections: Counter,
    /// Failed upstream connections (`sluice_upstream_connect_failures_total`).
    pub(crate) upstream_connect_failures: Counter,
    /// Node ids outside the port range (`sluice_unknown_nodes_total`).
    pub(crate) unknown_nodes: Counter,
}

/// The client signals of every virtual cluster the process has run.
#[derive(Debug)]
pub struct Signals {
    started: Instant,
    /// By cluster name; written when a generation is prepared, read by
    /// snapshots: never on the data path.
    clusters: RwLock<HashMap<String, Arc<ClusterSignals>>>,
    response_errors: Family<ResponseErrorLabels, Counter>,
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            started: Instant::now(),
            clusters: RwLock::new(HashMap::new()),
            response_errors: Family::default(),
        }
    }
}

impl Signals {
    /// Registers `sluice_response_errors_total` in `r`.
    pub(crate) fn register(&self, r: &mut Registry) {
        r.register(
            "response_errors",
            "Error codes in the upstream responses the proxy decodes anyway (Metadata: the response's, topics' and partitions'; FindCoordinator; DescribeCluster), one per response per distinct error; a filter's own answers are not counted",
            self.response_errors.clone(),
        );
    }

    /// The counters of cluster `name`, made at its first generation and
    /// shared by every later one; `shared`: those of its metrics.
    pub(crate) fn cluster(&self, name: &str, shared: &Shared) -> Arc<ClusterSignals> {
        let known = self
            .clusters
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .cloned();
        if let Some(known) = known {
            return known;
        }
        let mut clusters = self
            .clusters
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let made = clusters
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(ClusterSignals::new(name, shared, &self.response_errors)));
        Arc::clone(made)
    }

    /// What the process has counted of `cluster`'s clients since it
    /// started (`window_ms`: since then); all 0 for a cluster it never ran.
    pub fn signals(&self, cluster: &str) -> ClientSignals {
        let now = Instant::now();
        let window_ms =
            u64::try_from(now.duration_since(self.started).as_millis()).unwrap_or(u64::MAX);
        let known = self
            .clusters
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(cluster)
            .cloned();
        match known {
            Some(c) => c.snapshot(window_ms, now),
            None => ClientSignals {
                window_ms,
                ..ClientSignals::default()
            },
        }
    }
}

/// One cluster's counters, shared by its generations.
#[derive(Debug)]
pub(crate) struct ClusterSignals {
    connections: Counter,
    upstream_connect_failures: Counter,
    unknown_nodes: Counter,
    requests: AtomicU64,
    closed: [AtomicU64; CloseReason::ALL.len()],
    /// `sluice_response_errors_total`'s series of this cluster, by API and
    /// error slot, made at their first error.
    errors: Box<[OnceLock<Counter>]>,
    name: String,
    family: Family<ResponseErrorLabels, Counter>,
    bootstrap_only: bootstrap::BootstrapOnly,
}

impl ClusterSignals {
    fn new(name: &str, shared: &Shared, family: &Family<ResponseErrorLabels, Counter>) -> Self {
        let slots = DecodedApi::ALL.len() * names::ERROR_SLOTS;
        ClusterSignals {
            connections: shared.connections.clone(),
            upstream_connect_failures: shared.upstream_connect_failures.clone(),
            unknown_nodes: shared.unknown_nodes.clone(),
            requests: AtomicU64::new(0),
            closed: std::array::from_fn(|_| AtomicU64::new(0)),
            errors: (0..slots).map(|_| OnceLock::new()).collect(),
            name: name.to_owned(),
            family: family.clone(),
            bootstrap_only: bootstrap::BootstrapOnly::default(),
        }
    }

    /// A request forwarded upstream (a filter's refusals are not).
    pub(crate) fn forwarded(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// A client connection closed on an error.
    pub(crate) fn closed_on_error(&self, reason: CloseReason) {
        self.closed[reason.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The error codes of one upstream response of `api` (distinct, not 0).
    pub(crate) fn response_errors(&self, api: DecodedApi, codes: &[i16]) {
        for code in codes {
            let slot = names::error_slot(*code);
            let at = api.index() * names::ERROR_SLOTS + slot;
            let Some(cell) = self.errors.get(at) else {
                continue;
            };
            cell.get_or_init(|| {
                self.family.get_or_create_owned(&ResponseErrorLabels {
                    cluster: self.name.clone(),
                    api: api.label(),
                    error: names::error_name(slot),
                })
            })
            .inc();
        }
    }

    /// A client at `ip` was answered Metadata on the bootstrap port (call
    /// once per connection).
    pub(crate) fn told_brokers(&self, ip: IpAddr) {
        self.bootstrap_only.told(ip, Instant::now());
    }

    /// A client at `ip` connected to a broker port.
    pub(crate) fn reached_broker(&self, ip: IpAddr) {
        self.bootstrap_only.reached(ip);
    }

    fn snapshot(&self, window_ms: u64, now: Instant) -> ClientSignals {
        let closed_on_error: BTreeMap<String, u64> = CloseReason::ALL
            .iter()
            .map(|r| {
                (
                    r.as_str().to_owned(),
                    self.closed[r.index()].load(Ordering::Relaxed),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        let mut response_errors = BTreeMap::new();
        for api in DecodedApi::ALL {
            for slot in 0..names::ERROR_SLOTS {
                let at = api.index() * names::ERROR_SLOTS + slot;
                let Some(n) = self
                    .errors
                    .get(at)
                    .and_then(OnceLock::get)
                    .map(Counter::get)
                else {
                    continue;
                };
                let key = format!("{}:{}", api.key(), names::error_name(slot));
                response_errors.insert(key, n);
            }
        }
        ClientSignals {
            window_ms,
            connections: self.connections.get(),
            requests: self.requests.load(Ordering::Relaxed),
            closed_on_error,
            upstream_connect_failures: self.upstream_connect_failures.get(),
            unknown_node_ids: self.unknown_nodes.get(),
            response_errors,
            bootstrap_only_clients: self.bootstrap_only.count(now),
        }
    }
}
