//! A bucket (the cluster's, or a client id's) of one kind: its virtual
//! clock (`pace`), which decides holding and throttle times, and Kafka's
//! windowed rate (`rate`), which only the usage gauge reads. A request
//! answers to two buckets at once, the cluster's and its client id's
//! ([`Pair`]): the tighter quota wins.

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tokio::time::Instant;

use super::pace::Pace;
use super::rate::Rate;
use super::{ClientLabels, Kind};

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

/// One client id's buckets (or `other`'s) and byte counters.
#[derive(Debug)]
pub(crate) struct Client {
    pub(super) buckets: Mutex<Buckets>,
    pub(super) produce_bytes: Counter,
    pub(super) fetch_bytes: Counter,
}

impl Client {
    /// Buckets and series for client id label `label` of cluster `cluster`.
    pub(super) fn new(
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

/// The two buckets one request answers to, each with its quota (`None`:
/// that bucket has none, it is only measured).
pub(super) struct Pair<'a> {
    pub(super) buckets: [&'a mut Bucket; 2],
    pub(super) quotas: [Option<u64>; 2],
}

impl Pair<'_> {
    /// When a request at `now` may pass: the later of its buckets' turns.
    pub(super) fn turn(&mut self, now: Instant) -> Instant {
        let mut at = now;
        for (bucket, quota) in self.buckets.iter_mut().zip(self.quotas) {
            if let Some(q) = quota {
                at = at.max(bucket.pace.conforms_at(q, now));
            }
        }
        at
    }

    /// Counts `bytes` passing at `at` (measured for the gauge at `now`);
    /// the throttle time then: until the next request conforms in both.
    pub(super) fn charge(&mut self, bytes: u64, at: Instant, now: Instant) -> Duration {
        let mut throttle = Duration::ZERO;
        for (bucket, quota) in self.buckets.iter_mut().zip(self.quotas) {
            bucket.rate.record(bytes, now);
            if let Some(q) = quota {
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
