//! Clients the proxy refused to authenticate: why ([`Unauthenticated`],
//! which closes the connection), and the failures remembered per source
//! address ([`Failures`]) to slow the next attempt from it.
//!
//! Failed authentications are slowed per source address: each failure from an
//! address within a minute of its last adds [`STEP`] to the wait before its
//! answer, up to [`MAX_DELAY`]; a success clears it. The table holds at
//! most [`MAX_ADDRESSES`] addresses (stale ones are dropped first; when all
//! are recent, a new address waits the longest), so no number of sources
//! grows it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::scram_server::AuthError;
use crate::config::sasl::SaslMechanism;

/// Why a client was not authenticated.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unauthenticated {
    /// Its proof (or password) failed, or it is not a known user; `user`
    /// is what it claimed (logged, never answered).
    #[error("{mechanism} as {user:?}: {why}")]
    Failed {
        mechanism: SaslMechanism,
        user: String,
        why: AuthError,
    },
    /// It sent another request before authenticating.
    #[error("{0} before authenticating")]
    Skipped(&'static str),
    /// It broke the exchange (a version, a mechanism not offered, too many
    /// frames, too slow).
    #[error("{0}")]
    Exchange(String),
}

/// What each recent failure adds (Kafka's own delay is 100 ms).
const STEP: Duration = Duration::from_millis(100);
/// The longest wait.
const MAX_DELAY: Duration = Duration::from_secs(5);
/// How long a failure is remembered.
const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered per cluster.
const MAX_ADDRESSES: usize = 10_000;

/// A cluster's recent failures, by source address.
#[derive(Debug, Default)]
pub(crate) struct Failures(Mutex<HashMap<IpAddr, (u32, Instant)>>);

impl Failures {
    /// Counts a failure from `peer`: how long to wait before answering it.
    pub(crate) fn failed(&self, peer: IpAddr) -> Duration {
        self.failed_at(peer, Instant::now())
    }

    fn failed_at(&self, peer: IpAddr, now: Instant) -> Duration {
        let mut table = self.lock();
        if table.len() >= MAX_ADDRESSES && !table.contains_key(&peer) {
            table.retain(|_, (_, last)| now.duration_since(*last) < WINDOW);
            if table.len() >= MAX_ADDRESSES {
                return MAX_DELAY;
            }
        }
        let (count, last) = table.entry(peer).or_insert((0, now));
        if now.duration_since(*last) >= WINDOW {
            *count = 0;
        }
        *count = count.saturating_add(1);
        *last = now;
        STEP.saturating_mul(*count).min(MAX_DELAY)
    }

    /// `peer` authenticated: its failures are forgotten.
    pub(crate) fn succeeded(&self, peer: IpAddr) {
        self.lock().remove(&peer);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, (u32, Instant)>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_slow_their_address_only_and_a_success_or_a_minute_clears_them() {
        let f = Failures::default();
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let t = Instant::now();
        assert_eq!(f.failed_at(a, t), STEP);
        assert_eq!(f.failed_at(a, t), STEP * 2);
        assert_eq!(f.failed_at(b, t), STEP, "another address");
        for _ in 0..100 {
            f.failed_at(a, t);
        }
        assert_eq!(f.failed_at(a, t), MAX_DELAY);
        assert_eq!(f.failed_at(a, t + WINDOW), STEP, "a minute later");
        f.succeeded(a);
        assert_eq!(f.failed_at(a, t + WINDOW), STEP);
    }

    #[test]
    fn the_table_is_bounded() {
        let f = Failures::default();
        let t = Instant::now();
        for i in 0..MAX_ADDRESSES as u32 {
            f.failed_at(IpAddr::from(i.to_be_bytes()), t);
        }
        let new: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(f.failed_at(new, t), MAX_DELAY, "full of recent ones");
        assert_eq!(f.lock().len(), MAX_ADDRESSES);
        assert_eq!(f.failed_at(new, t + WINDOW), STEP, "the stale ones go");
        assert_eq!(f.lock().len(), 1);
    }
}
