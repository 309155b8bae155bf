//! Quota usage: what the `quota` filter measures of each virtual cluster's
//! clients, and its metrics.
//!
//! - [`Quotas`]: the process's registry, one per [`Metrics`] (reached with
//!   [`Metrics::quotas`]); it holds each cluster's [`ClusterQuota`] by
//!   cluster *name*, so usage outlives generations and filter chains: a
//!   reload that swaps the chain in place (the quota changed or not), or
//!   starts a new generation, goes on measuring in the same buckets.
//! - `rate`: Kafka's quota arithmetic, pure
//! - `usage`: `sluice_quota_usage_ratio`, measured at each scrape
//!
//! Client ids get a bucket (and metric series) of their own up to the
//! filter's `maxClientIds`; later ones share `other`, so a client cannot
//! grow memory or `/metrics` by inventing ids.
//!
//! [`Metrics`]: crate::metrics::Metrics
//! [`Metrics::quotas`]: crate::metrics::Metrics::quotas

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use sluice_config::filter::{ByteRates, QuotaSpec};
use tokio::time::Instant;

pub(crate) mod rate;
mod usage;

use rate::Rate;

/// The client id label (and bucket) of every client id past `maxClientIds`.
pub(crate) const OTHER: &str = "other";
/// Longest client id written in a label; longer ones are cut.
const MAX_LABEL_CHARS: usize = 64;

/// What a quota counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Produce request bytes.
    Produce,
    /// Fetch response bytes.
    Fetch,
}

impl Kind {
    /// The `kind` label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Produce => "produce",
            Kind::Fetch => "fetch",
        }
    }

    fn of(self, rates: &ByteRates) -> Option<u64> {
        match self {
            Kind::Produce => rates.produce.map(|r| r.get()),
            Kind::Fetch => rates.fetch.map(|r| r.get()),
        }
    }
}

/// `cluster` and `kind` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct KindLabels {
    /// Virtual cluster name.
    pub(crate) cluster: String,
    /// `produce` or `fetch`.
    pub(crate) kind: &'static str,
}

/// `cluster`, `client_id` and `kind` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ClientLabels {
    /// Virtual cluster name.
    pub(crate) cluster: String,
    /// The client id, or `other` past `maxClientIds`.
    pub(crate) client_id: String,
    /// `produce` or `fetch`.
    pub(crate) kind: &'static str,
}

type SecondsCounter = Counter<f64, AtomicU64>;

/// The quota usage of every virtual cluster the process has run.
#[derive(Debug, Default)]
pub(crate) struct Quotas {
    /// By cluster name; written when a generation is prepared.
    clusters: Arc<RwLock<HashMap<String, Arc<ClusterQuota>>>>,
    throttle: Family<KindLabels, SecondsCounter>,
    bytes: Family<ClientLabels, Counter>,
}

impl Quotas {
    /// Registers the quota metrics in `r`.
    pub(crate) fn register(&self, r: &mut Registry) {
        r.register(
            "throttle_seconds",
            "Throttle time the quota filter gave clients (kind: produce, fetch): in their responses' throttle_time_ms (Produce) and as time their connection was not read",
            self.throttle.clone(),
        );
        r.register(
            "quota_bytes",
            "Bytes counted against quotas (kind: produce: Produce request frames; fetch: Fetch response frames), by client id (the first maxClientIds seen; later ones as other)",
            self.bytes.clone(),
        );
        r.register_collector(Box::new(usage::Usage::new(Arc::clone(&self.clusters))));
    }

    /// The usage of cluster `name`, made at its first generation and
    /// shared by every later one.
    pub(crate) fn cluster(&self, name: &str) -> Arc<ClusterQuota> {
        let known = read(&self.clusters).get(name).cloned();
        if let Some(known) = known {
            return known;
        }
        let mut clusters = self
            .clusters
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let made = clusters
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(ClusterQuota::new(name, &self.throttle, &self.bytes)));
        Arc::clone(made)
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A produce and a fetch rate.
#[derive(Debug)]
struct Buckets {
    produce: Rate,
    fetch: Rate,
}

impl Buckets {
    fn new(now: Instant) -> Self {
        Buckets {
            produce: Rate::new(now),
            fetch: Rate::new(now),
        }
    }

    fn of(&mut self, kind: Kind) -> &mut Rate {
        match kind {
            Kind::Produce => &mut self.produce,
            Kind::Fetch => &mut self.fetch,
        }
    }
}

/// One client id's buckets (or `other`'s) and byte counters.
#[derive(Debug)]
pub(crate) struct Client {
    buckets: Mutex<Buckets>,
    produce_bytes: Counter,
    fetch_bytes: Counter,
}

impl Client {
    /// Buckets and series for client id label `label` of cluster `cluster`.
    fn new(
        cluster: &str,
        bytes: &Family<ClientLabels, Counter>,
        label: &str,
        now: Instant,
    ) -> Self {
        let series = |kind: Kind| {
            bytes.get_or_create_owned(&ClientLabels {
                cluster: cluster.to_owned(),
                client_id: label.to_owned(),
                kind: kind.label(),
            })
        };
        Client {
            buckets: Mutex::new(Buckets::new(now)),
            produce_bytes: series(Kind::Produce),
            fetch_bytes: series(Kind::Fetch),
        }
    }
}

/// One cluster's quota usage, shared by its generations.
#[derive(Debug)]
pub(crate) struct ClusterQuota {
    name: String,
    /// All clients together.
    cluster: Mutex<Buckets>,
    clients: RwLock<HashMap<String, Arc<Client>>>,
    other: Arc<Client>,
    /// Connections accepted.
    connections: Mutex<Rate>,
    /// The spec of the chain in force, for the usage gauge.
    spec: Mutex<Option<QuotaSpec>>,
    throttle_produce: SecondsCounter,
    throttle_fetch: SecondsCounter,
    bytes: Family<ClientLabels, Counter>,
}

impl ClusterQuota {
    fn new(
        name: &str,
        throttle: &Family<KindLabels, SecondsCounter>,
        bytes: &Family<ClientLabels, Counter>,
    ) -> Self {
        let now = Instant::now();
        let kind = |kind| KindLabels {
            cluster: name.to_owned(),
            kind,
        };
        ClusterQuota {
            name: name.to_owned(),
            cluster: Mutex::new(Buckets::new(now)),
            clients: RwLock::new(HashMap::new()),
            other: Arc::new(Client::new(name, bytes, OTHER, now)),
            connections: Mutex::new(Rate::new(now)),
            spec: Mutex::new(None),
            throttle_produce: throttle.get_or_create_owned(&kind(Kind::Produce.label())),
            throttle_fetch: throttle.get_or_create_owned(&kind(Kind::Fetch.label())),
            bytes: bytes.clone(),
        }
    }

    /// Puts `spec` in force for the usage gauge (`None`: no quota now).
    pub(crate) fn configure(&self, spec: Option<QuotaSpec>) {
        *lock(&self.spec) = spec;
    }

    /// The buckets of client id `id` (`None`: a null client id): its own
    /// while fewer than `max` ids have one, `other`'s after.
    pub(crate) fn client(&self, id: Option<&str>, max: u32) -> Arc<Client> {
        let id = id.unwrap_or("");
        if let Some(known) = read(&self.clients).get(id) {
            return Arc::clone(known);
        }
        let mut clients = self
            .clients
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(known) = clients.get(id) {
            return Arc::clone(known);
        }
        if clients.len() >= max as usize {
            return Arc::clone(&self.other);
        }
        let made = Arc::new(Client::new(
            &self.name,
            &self.bytes,
            &label(id),
            Instant::now(),
        ));
        clients.insert(id.to_owned(), Arc::clone(&made));
        made
    }

    /// Counts `bytes` of `kind` for `client` at `now`; how long its
    /// connection must wait under `spec`: the longer of the cluster's and
    /// the client's throttle (the tighter quota wins).
    pub(crate) fn record(
        &self,
        spec: &QuotaSpec,
        client: &Client,
        kind: Kind,
        bytes: u64,
        now: Instant,
    ) -> Duration {
        let (counter, throttle) = match kind {
            Kind::Produce => (&client.produce_bytes, &self.throttle_produce),
            Kind::Fetch => (&client.fetch_bytes, &self.throttle_fetch),
        };
        counter.inc_by(bytes);
        let charge = |buckets: &Mutex<Buckets>, quota: Option<u64>| {
            let mut buckets = lock(buckets);
            let rate = buckets.of(kind);
            rate.record(bytes, now);
            quota.map_or(Duration::ZERO, |q| rate.throttle(q, now))
        };
        let wait = charge(&self.cluster, kind.of(&spec.cluster))
            .max(charge(&client.buckets, kind.of(&spec.per_client_id)));
        if !wait.is_zero() {
            throttle.inc_by(wait.as_secs_f64());
        }
        wait
    }

    /// Whether a new connection at `now` stays within
    /// `connectionsPerSecond`; counted when it does.
    pub(crate) fn admit_connection(&self, spec: &QuotaSpec, now: Instant) -> bool {
        let Some(max) = spec.connections_per_second else {
            return true;
        };
        let mut rate = lock(&self.connections);
        if rate.measure_with(1, now) > f64::from(max.get()) {
            return false;
        }
        rate.record(1, now);
        true
    }

    /// The highest usage of `kind` at `now`: observed rate over quota, of
    /// the cluster's and of every client's; `None` without such a quota.
    fn usage(&self, kind: Kind, now: Instant) -> Option<f64> {
        let spec = (*lock(&self.spec))?;
        let mut highest: Option<f64> = None;
        let mut seen = |buckets: &Mutex<Buckets>, quota: u64| {
            let ratio = lock(buckets).of(kind).measure(now) / quota as f64;
            highest = Some(highest.map_or(ratio, |h| h.max(ratio)));
        };
        if let Some(q) = kind.of(&spec.cluster) {
            seen(&self.cluster, q);
        }
        if let Some(q) = kind.of(&spec.per_client_id) {
            for client in read(&self.clients).values() {
                seen(&client.buckets, q);
            }
            seen(&self.other.buckets, q);
        }
        highest
    }
}

/// A client id as a label value: at most [`MAX_LABEL_CHARS`] characters,
/// control characters replaced.
fn label(id: &str) -> String {
    id.chars()
        .take(MAX_LABEL_CHARS)
        .map(|c| if c.is_control() { '_' } else { c })
        .collect()
}

#[cfg(test)]
mod tests;
