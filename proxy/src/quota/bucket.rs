//! A bucket (the cluster's, a client id's or a principal's) of one kind:
//! its virtual clock (`pace`), which decides holding and throttle times,
//! and Kafka's windowed rate (`rate`), which only the usage gauge reads. A
//! request answers to its buckets at once, the cluster's, its client id's
//! and, where principals have quotas, its principal's ([`Set`]): the
//! tightest quota wins.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use tokio::time::Instant;

use super::Kind;
use super::pace::Pace;
use super::rate::Rate;

/// One bucket of one kind.
#[derive(Debug)]
pub(crate) struct Bucket {
    pub(super) pace: Pace,
    pub(super) rate: Rate,
}

impl Bucket {
    fn new(now: Instant) -> Self {
        Bucket {
            pace: Pace::new(now),
            rate: Rate::new(now),
        }
    }
}

/// A produce and a fetch bucket.
#[derive(Debug)]
pub(crate) struct Buckets {
    produce: Bucket,
    fetch: Bucket,
}

impl Buckets {
    pub(super) fn new(now: Instant) -> Self {
        Buckets {
            produce: Bucket::new(now),
            fetch: Bucket::new(now),
        }
    }

    pub(super) fn of(&mut self, kind: Kind) -> &mut Bucket {
        match kind {
            Kind::Produce => &mut self.produce,
            Kind::Fetch => &mut self.fetch,
        }
    }
}

/// One holder's buckets (a client id's, a principal's, or `other`'s) and
/// byte counters.
#[derive(Debug)]
pub(crate) struct Client {
    pub(super) buckets: Mutex<Buckets>,
    pub(super) produce_bytes: Counter,
    pub(super) fetch_bytes: Counter,
}

impl Client {
    /// Buckets counted in `series` (produce, fetch).
    pub(super) fn new(series: [Counter; 2], now: Instant) -> Self {
        let [produce_bytes, fetch_bytes] = series;
        Client {
            buckets: Mutex::new(Buckets::new(now)),
            produce_bytes,
            fetch_bytes,
        }
    }
}

/// The holders a request is counted against beside its cluster: its
/// client id's buckets, and its principal's where principals have quotas.
#[derive(Debug)]
pub(crate) struct Holders {
    pub(crate) client: Arc<Client>,
    pub(crate) principal: Option<Arc<Client>>,
}

impl Holders {
    pub(crate) fn get(&self) -> (&Client, Option<&Client>) {
        (&self.client, self.principal.as_deref())
    }
}

/// The buckets one request answers to (the cluster's, its client id's, its
/// principal's when principals have quotas), each with its quota (`None`:
/// that bucket has none, it is only measured).
pub(super) struct Set<'a> {
    pub(super) buckets: [Option<(&'a mut Bucket, Option<u64>)>; 3],
}

impl Set<'_> {
    /// When a request at `now` may pass: the latest of its buckets' turns.
    pub(super) fn turn(&mut self, now: Instant) -> Instant {
        let mut at = now;
        for (bucket, quota) in self.buckets.iter_mut().flatten() {
            if let Some(q) = *quota {
                at = at.max(bucket.pace.conforms_at(q, now));
            }
        }
        at
    }

    /// Counts `bytes` passing at `at` (measured for the gauge at `now`);
    /// the throttle time then: until the next request conforms in all.
    pub(super) fn charge(&mut self, bytes: u64, at: Instant, now: Instant) -> Duration {
        let mut throttle = Duration::ZERO;
        for (bucket, quota) in self.buckets.iter_mut().flatten() {
            bucket.rate.record(bytes, now);
            if let Some(q) = *quota {
                bucket.pace.charge(q, bytes, at);
                throttle = throttle.max(bucket.pace.throttle(at));
            }
        }
        // Whole milliseconds, as `throttle_time_ms` carries it, rounded up:
        // a client that waits it out conforms.
        let ms = throttle.as_nanos().div_ceil(1_000_000);
        Duration::from_millis(ms.try_into().unwrap_or(u64::MAX))
    }
}
