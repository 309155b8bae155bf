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
//! filter's `maxClientIds`, principals up to `maxPrincipals`; later ones
//! share `other` (`book`), so a client cannot grow memory or `/metrics` by
//! inventing ids.
//!
//! [`Metrics`]: crate::metrics::Metrics
//! [`Metrics::quotas`]: crate::metrics::Metrics::quotas

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use sluice_config::filter::{ByteRates, QuotaSpec};
use tokio::sync::{Notify, futures::Notified};
use tokio::time::Instant;

mod book;
mod bucket;
mod labels;
mod pace;
pub(crate) mod rate;
mod usage;

use book::{Book, Series};
use bucket::{Buckets, Set};
pub(crate) use bucket::{Client, Holders};
pub(crate) use labels::{ClientLabels, KindLabels, PrincipalBytesLabels};
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

type SecondsCounter = Counter<f64, AtomicU64>;

/// The quota usage of every virtual cluster the process has run.
#[derive(Debug, Default)]
pub(crate) struct Quotas {
    /// By cluster name; written when a generation is prepared.
    clusters: Arc<RwLock<HashMap<String, Arc<ClusterQuota>>>>,
    throttle: Family<KindLabels, SecondsCounter>,
    held: Family<KindLabels, SecondsCounter>,
    bytes: Family<ClientLabels, Counter>,
    principal_bytes: Family<PrincipalBytesLabels, Counter>,
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
        r.register(
            "quota_principal_bytes",
            "Bytes counted against perPrincipal quotas (kind: produce, fetch), by principal (\"\" for connections without one; the first maxPrincipals seen; later ones as other)",
            self.principal_bytes.clone(),
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
    /// All clients together.
    cluster: Mutex<Buckets>,
    /// By client id.
    ids: Book,
    /// By principal.
    principals: Book,
    /// Connections accepted.
    connections: Mutex<Rate>,
    /// The spec of the chain in force, for the usage gauge.
    spec: Mutex<Option<QuotaSpec>>,
    /// Wakes the requests held when the quota is removed: they pass.
    removed: Notify,
    /// Throttle time given and time held, `[produce, fetch]`.
    throttle: [SecondsCounter; 2],
    held: [SecondsCounter; 2],
}

impl ClusterQuota {
    fn new(name: &str, quotas: &Quotas) -> Self {
        let now = Instant::now();
        let series = |family: &Family<KindLabels, SecondsCounter>| {
            [Kind::Produce, Kind::Fetch].map(|kind| {
                family.get_or_create_owned(&KindLabels {
                    cluster: name.to_owned(),
                    kind: kind.label(),
                })
            })
        };
        ClusterQuota {
            cluster: Mutex::new(Buckets::new(now)),
            ids: Book::new(name, Series::ClientIds(quotas.bytes.clone()), now),
            principals: Book::new(
                name,
                Series::Principals(quotas.principal_bytes.clone()),
                now,
            ),
            connections: Mutex::new(Rate::new(now)),
            spec: Mutex::new(None),
            removed: Notify::new(),
            throttle: series(&quotas.throttle),
            held: series(&quotas.held),
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
        self.ids.get(id.unwrap_or(""), max)
    }

    /// The buckets of principal `principal` under `spec`: `None` unless
    /// `perPrincipal` sets a rate; connections without a principal share
    /// those of `""`.
    pub(crate) fn principal(
        &self,
        spec: &QuotaSpec,
        principal: Option<&str>,
    ) -> Option<Arc<Client>> {
        if spec.per_principal.is_empty() {
            return None;
        }
        Some(
            self.principals
                .get(principal.unwrap_or(""), spec.max_principals),
        )
    }

    /// A Produce of `bytes` from `client` at `now` under `spec`: its place
    /// reserved in the cluster's and the client's buckets, so that the next
    /// one, on any connection, comes after it. When it may be forwarded
    /// (the later of the two turns: the tighter quota wins) and the
    /// throttle time its response carries.
    pub(crate) fn reserve(
        &self,
        spec: &QuotaSpec,
        (client, principal): (&Client, Option<&Client>),
        bytes: u64,
        now: Instant,
    ) -> Turn {
        let kind = Kind::Produce;
        let (mut all, mut own) = (lock(&self.cluster), lock(&client.buckets));
        let mut theirs = principal.map(|p| lock(&p.buckets));
        let mut set = set(&mut all, &mut own, theirs.as_deref_mut(), spec, kind);
        let start = set.turn(now);
        let throttle = set.charge(bytes, start, now);
        drop((all, own, theirs));
        self.count((client, principal), kind, bytes, throttle);
        self.held(kind, start - now);
        Turn { start, throttle }
    }

    /// When a Fetch from `client` at `now` may be forwarded under `spec`:
    /// once neither of its buckets owes more than the tolerance.
    pub(crate) fn fetch_turn(
        &self,
        spec: &QuotaSpec,
        (client, principal): (&Client, Option<&Client>),
        now: Instant,
    ) -> Instant {
        let kind = Kind::Fetch;
        let (mut all, mut own) = (lock(&self.cluster), lock(&client.buckets));
        let mut theirs = principal.map(|p| lock(&p.buckets));
        let at = set(&mut all, &mut own, theirs.as_deref_mut(), spec, kind).turn(now);
        drop((all, own, theirs));
        self.held(kind, at - now);
        at
    }

    /// Counts a Fetch response of `bytes` to `client` at `now` (as its
    /// head arrives); the throttle time it carries.
    pub(crate) fn fetched(
        &self,
        spec: &QuotaSpec,
        (client, principal): (&Client, Option<&Client>),
        bytes: u64,
        now: Instant,
    ) -> Duration {
        let kind = Kind::Fetch;
        let (mut all, mut own) = (lock(&self.cluster), lock(&client.buckets));
        let mut theirs = principal.map(|p| lock(&p.buckets));
        let throttle =
            set(&mut all, &mut own, theirs.as_deref_mut(), spec, kind).charge(bytes, now, now);
        drop((all, own, theirs));
        self.count((client, principal), kind, bytes, throttle);
        throttle
    }

    fn count(
        &self,
        holders: (&Client, Option<&Client>),
        kind: Kind,
        bytes: u64,
        throttle: Duration,
    ) {
        for holder in [Some(holders.0), holders.1].into_iter().flatten() {
            match kind {
                Kind::Produce => holder.produce_bytes.inc_by(bytes),
                Kind::Fetch => holder.fetch_bytes.inc_by(bytes),
            };
        }
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
            self.ids.each(|client| seen(&client.buckets, q));
        }
        if let Some(q) = kind.of(&spec.per_principal) {
            self.principals
                .each(|principal| seen(&principal.buckets, q));
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

/// The cluster's (`all`), a client id's (`own`) and a principal's
/// (`theirs`, where principals have quotas) buckets of `kind`, with their
/// quotas under `spec`.
fn set<'a>(
    all: &'a mut Buckets,
    own: &'a mut Buckets,
    theirs: Option<&'a mut Buckets>,
    spec: &QuotaSpec,
    kind: Kind,
) -> Set<'a> {
    Set {
        buckets: [
            Some((all.of(kind), kind.of(&spec.cluster))),
            Some((own.of(kind), kind.of(&spec.per_client_id))),
            theirs.map(|b| (b.of(kind), kind.of(&spec.per_principal))),
        ],
    }
}

/// A client id or principal as a label value: at most [`MAX_LABEL_CHARS`] characters,
/// control characters replaced.
fn label(id: &str) -> String {
    id.chars()
        .take(MAX_LABEL_CHARS)
        .map(|c| if c.is_control() { '_' } else { c })
        .collect()
}

#[cfg(test)]
mod tests;
