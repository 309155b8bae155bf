//! Quota usage: what the `quota` filter measures of each virtual cluster's
//! clients, and its metrics.
//!
//! - [`Quotas`]: the process's registry, one per [`Metrics`] (reached with
//!   [`Metrics::quotas`]); it holds each cluster's [`ClusterQuota`] by
//!   cluster *name*, so usage outlives generations and filter chains: a
//!   reload that swaps the chain in place (the quota changed or not), or
//!   starts a new generation, goes on measuring in the same buckets.
//! - `pace`: the virtual clock (GCRA) that decides when a request passes
//!   and the throttle time it is given, pure
//! - `bucket`: a bucket's clock and rate; the two buckets of a request
//! - `rate`: Kafka's windowed rate, pure: only the usage gauge reads it
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
use tokio::sync::{Notify, futures::Notified};
use tokio::time::Instant;

mod bucket;
mod pace;
pub(crate) mod rate;
mod usage;

pub(crate) use bucket::Client;
use bucket::{Buckets, Pair};
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
    held: Family<KindLabels, SecondsCounter>,
    bytes: Family<ClientLabels, Counter>,
}

impl Quotas {
    /// Registers the quota metrics in `r`.
    pub(crate) fn register(&self, r: &mut Registry) {
        r.register(
            "throttle_seconds",
            "Throttle time the quota filter gave clients (kind: produce, fetch) in their responses' throttle_time_ms",
            self.throttle.clone(),
        );
        r.register(
            "quota_held_seconds",
            "Time the quota filter held requests (kind: produce, fetch) unread before forwarding them, their bucket being over its quota",
            self.held.clone(),
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
            .or_insert_with(|| Arc::new(ClusterQuota::new(name, self)));
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
    /// Wakes the requests held when the quota is removed: they pass.
    removed: Notify,
    /// Throttle time given and time held, `[produce, fetch]`.
    throttle: [SecondsCounter; 2],
    held: [SecondsCounter; 2],
    bytes: Family<ClientLabels, Counter>,
}

impl ClusterQuota {
    fn new(name: &str, quotas: &Quotas) -> Self {
        let now = Instant::now();
        let bytes = &quotas.bytes;
        let series = |family: &Family<KindLabels, SecondsCounter>| {
            [Kind::Produce, Kind::Fetch].map(|kind| {
                family.get_or_create_owned(&KindLabels {
                    cluster: name.to_owned(),
                    kind: kind.label(),
                })
            })
        };
        ClusterQuota {
            name: name.to_owned(),
            cluster: Mutex::new(Buckets::new(now)),
            clients: RwLock::new(HashMap::new()),
            other: Arc::new(Client::new(name, bytes, OTHER, now)),
            connections: Mutex::new(Rate::new(now)),
            spec: Mutex::new(None),
            removed: Notify::new(),
            throttle: series(&quotas.throttle),
            held: series(&quotas.held),
            bytes: bytes.clone(),
        }
    }

    /// Puts `spec` in force for the usage gauge (`None`: no quota now,
    /// and the requests held pass at once).
    pub(crate) fn configure(&self, spec: Option<QuotaSpec>) {
        let removed = spec.is_none();
        *lock(&self.spec) = spec;
        if removed {
            self.removed.notify_waiters();
        }
    }

    /// Resolves when the quota is next removed (see [`Self::configure`]).
    pub(crate) fn removed(&self) -> Notified<'_> {
        self.removed.notified()
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

    /// A Produce of `bytes` from `client` at `now` under `spec`: its place
    /// reserved in the cluster's and the client's buckets, so that the next
    /// one, on any connection, comes after it. When it may be forwarded
    /// (the later of the two turns: the tighter quota wins) and the
    /// throttle time its response carries.
    pub(crate) fn reserve(
        &self,
        spec: &QuotaSpec,
        client: &Client,
        bytes: u64,
        now: Instant,
    ) -> Turn {
        let kind = Kind::Produce;
        let (mut all, mut own) = (lock(&self.cluster), lock(&client.buckets));
        let mut pair = pair(&mut all, &mut own, spec, kind);
        let start = pair.turn(now);
        let throttle = pair.charge(bytes, start, now);
        drop((all, own));
        self.count(client, kind, bytes, throttle);
        self.held(kind, start - now);
        Turn { start, throttle }
    }

    /// When a Fetch from `client` at `now` may be forwarded under `spec`:
    /// once neither of its buckets owes more than the tolerance.
    pub(crate) fn fetch_turn(&self, spec: &QuotaSpec, client: &Client, now: Instant) -> Instant {
        let kind = Kind::Fetch;
        let (mut all, mut own) = (lock(&self.cluster), lock(&client.buckets));
        let at = pair(&mut all, &mut own, spec, kind).turn(now);
        drop((all, own));
        self.held(kind, at - now);
        at
    }

    /// Counts a Fetch response of `bytes` to `client` at `now` (as its
    /// head arrives); the throttle time it carries.
    pub(crate) fn fetched(
        &self,
        spec: &QuotaSpec,
        client: &Client,
        bytes: u64,
        now: Instant,
    ) -> Duration {
        let kind = Kind::Fetch;
        let (mut all, mut own) = (lock(&self.cluster), lock(&client.buckets));
        let throttle = pair(&mut all, &mut own, spec, kind).charge(bytes, now, now);
        drop((all, own));
        self.count(client, kind, bytes, throttle);
        throttle
    }

    fn count(&self, client: &Client, kind: Kind, bytes: u64, throttle: Duration) {
        match kind {
            Kind::Produce => client.produce_bytes.inc_by(bytes),
            Kind::Fetch => client.fetch_bytes.inc_by(bytes),
        };
        if !throttle.is_zero() {
            self.throttle[kind as usize].inc_by(throttle.as_secs_f64());
        }
    }

    fn held(&self, kind: Kind, held: Duration) {
        if !held.is_zero() {
            self.held[kind as usize].inc_by(held.as_secs_f64());
        }
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
            let ratio = lock(buckets).of(kind).rate.measure(now) / quota as f64;
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

/// When a request passes, and the throttle time its response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Turn {
    /// When it may be forwarded: now, or later to hold it.
    pub(crate) start: Instant,
    /// Until the next request conforms, counted from `start`.
    pub(crate) throttle: Duration,
}

/// The cluster's (`all`) and a client's (`own`) buckets of `kind`, with
/// their quotas under `spec`.
fn pair<'a>(all: &'a mut Buckets, own: &'a mut Buckets, spec: &QuotaSpec, kind: Kind) -> Pair<'a> {
    Pair {
        buckets: [all.of(kind), own.of(kind)],
        quotas: [kind.of(&spec.cluster), kind.of(&spec.per_client_id)],
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
