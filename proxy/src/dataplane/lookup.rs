//! The proxy's own broker lookups, made so that they do not amplify: a client
//! whose first connection is to a broker port of a node the proxy does not
//! know yet makes the proxy ask the upstream cluster for its brokers. Per
//! cluster generation, one such lookup is in flight at a time (the others
//! await its outcome) and an outcome is remembered for [`FAILURE_MEMORY`],
//! so a failing upstream sees at most one lookup per second however many
//! clients retry, and the log says each new cause once.
//!
//! [`Memory`] decides (pure, the clock passed in); [`Lookups`] runs it.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::metrics::ClusterMetrics;

/// How long a lookup's outcome is remembered: a failure fails the client
/// connections that need a lookup at once meanwhile.
pub(crate) const FAILURE_MEMORY: Duration = Duration::from_secs(1);
/// Connections that may await one lookup in flight; more fail at once.
pub(crate) const MAX_WAITERS: usize = 1024;

/// Why a lookup failed, as the client connections it fails are told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The error, rendered.
    pub cause: Arc<str>,
    /// The upstream refused the proxy for want of authentication.
    pub auth: bool,
}

/// What a lookup came to: the learned nodes are in the cluster on success.
pub(crate) type Outcome = Result<(), Failure>;

/// What a connection that needs a lookup does now.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing in flight, nothing remembered: it looks up (flight number).
    Lead(u64),
    /// A lookup is in flight: it awaits that one (flight number).
    Wait(u64),
    /// A lookup ended less than [`FAILURE_MEMORY`] ago: its outcome.
    Remembered(Outcome),
    /// [`MAX_WAITERS`] await the lookup in flight already.
    Crowded,
}

/// How a cluster's lookups changed, for the log.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// They fail, with a cause not logged last.
    Failing(Failure),
    /// They work again after failing with this cause.
    Recovered(Arc<str>),
}

/// One cluster generation's lookups: in flight, remembered, logged.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    flight: u64,
    in_flight: bool,
    waiters: usize,
    last: Option<Last>,
    failing: Option<Arc<str>>,
}

#[derive(Debug)]
struct Last {
    flight: u64,
    at: Instant,
    outcome: Outcome,
}

impl Memory {
    /// Look up, wait for the lookup in flight, or answer from memory. A
    /// [`Decision::Wait`] counts a waiter until [`Memory::leave`].
    pub(crate) fn decide(&mut self, now: Instant) -> Decision {
        if self.in_flight {
            if self.waiters >= MAX_WAITERS {
                return Decision::Crowded;
            }
            self.waiters += 1;
            return Decision::Wait(self.flight);
        }
        if let Some(last) = &self.last
            && now.saturating_duration_since(last.at) < FAILURE_MEMORY
        {
            return Decision::Remembered(last.outcome.clone());
        }
        self.flight += 1;
        self.in_flight = true;
        Decision::Lead(self.flight)
    }

    /// The outcome of `flight`, once it ended (not if it was abandoned).
    pub(crate) fn outcome_of(&self, flight: u64) -> Option<Outcome> {
        let last = self.last.as_ref()?;
        (last.flight == flight).then(|| last.outcome.clone())
    }

    /// A waiter stops waiting.
    pub(crate) fn leave(&mut self) {
        self.waiters = self.waiters.saturating_sub(1);
    }

    /// `flight` ended with `outcome` at `now`: remembered, and what the log
    /// should say about it, if anything.
    pub(crate) fn finish(&mut self, flight: u64, now: Instant, outcome: Outcome) -> Option<Change> {
        if !self.in_flight || flight != self.flight {
            return None;
        }
        self.in_flight = false;
        let change = match &outcome {
            Err(f) if self.failing.as_deref() != Some(&*f.cause) => {
                self.failing = Some(Arc::clone(&f.cause));
                Some(Change::Failing(f.clone()))
            }
            Err(_) => None,
            Ok(()) => self.failing.take().map(Change::Recovered),
        };
        self.last = Some(Last {
            flight,
            at: now,
            outcome,
        });
        change
    }

    /// Forgets the last outcome (new credentials or TLS material): the next
    /// connection that needs a lookup makes one. A flight in flight stays.
    pub(crate) fn forget(&mut self) {
        self.last = None;
    }

    /// `flight` ended without an outcome (its connection went away): the
    /// next to decide looks up.
    pub(crate) fn abandon(&mut self, flight: u64) {
        if flight == self.flight {
            self.in_flight = false;
        }
    }
}

/// How a connection came by its outcome (`result` of
/// `sluice_broker_lookups_total`, with `ok` and `failed` for its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// Its own lookup.
    Own,
    /// The lookup another connection had in flight.
    Shared,
    /// A lookup that ended less than [`FAILURE_MEMORY`] ago, or none at
    /// all ([`Decision::Crowded`]).
    Remembered,
}

/// [`Memory`] behind a lock that is never held across an await, and the
/// signal that a flight ended.
#[derive(Debug)]
pub(crate) struct Lookups {
    memory: Mutex<Memory>,
    ended: watch::Sender<u64>,
}

impl Default for Lookups {
    fn default() -> Self {
        Lookups {
            memory: Mutex::default(),
            ended: watch::Sender::new(0),
        }
    }
}

mod run;
#[cfg(test)]
mod tests;
