//! [`Lookups::once`]: one lookup in flight per cluster generation, its
//! outcome shared with the connections that wait and remembered for the
//! ones that come after; cancellation-safe on every path.

use super::{
    Change, ClusterMetrics, Decision, FAILURE_MEMORY, Failure, Future, Instant, Lookups, Memory,
    Outcome, PoisonError, Via,
};

impl Lookups {
    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the last outcome: see [`Memory::forget`].
    pub(crate) fn forget(&self) {
        self.memory().forget();
    }

    /// The outcome of a lookup for a connection of cluster `name`: `lookup`
    /// runs only when no other is in flight and none ended less than
    /// [`FAILURE_MEMORY`] ago. Counted in `sluice_broker_lookups_total`;
    /// a change of cause or a recovery is logged once.
    pub(crate) async fn once<F, Fut>(
        &self,
        name: &str,
        metrics: &ClusterMetrics,
        lookup: F,
    ) -> (Via, Outcome)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let mut lookup = Some(lookup);
        loop {
            let (decision, mut ended) = {
                let mut memory = self.memory();
                // Subscribed under the lock: a flight cannot end unseen
                // between the decision and the wait.
                (memory.decide(Instant::now()), self.ended.subscribe())
            };
            let flight = match decision {
                Decision::Remembered(outcome) => {
                    metrics.broker_lookup("cached_failure");
                    return (Via::Remembered, outcome);
                }
                Decision::Crowded => {
                    metrics.broker_lookup("cached_failure");
                    return (Via::Remembered, Err(crowded()));
                }
                Decision::Lead(flight) => flight,
                Decision::Wait(flight) => {
                    let waiting = Waiting(self);
                    // An error means the sender is gone with the cluster.
                    let _ = ended.changed().await;
                    let shared = self.memory().outcome_of(flight);
                    drop(waiting);
                    if let Some(outcome) = shared {
                        metrics.broker_lookup("shared");
                        return (Via::Shared, outcome);
                    }
                    // Abandoned: decide again.
                    continue;
                }
            };
            let leading = Leading {
                lookups: self,
                flight,
                ended: false,
            };
            // Only a leader takes it, and a leader returns: never empty here
            // (were it, the guard would hand the flight on).
            let Some(lookup) = lookup.take() else {
                return (Via::Own, Err(crowded()));
            };
            let outcome = lookup().await;
            leading.finish(name, outcome.clone());
            metrics.broker_lookup(if outcome.is_ok() { "ok" } else { "failed" });
            return (Via::Own, outcome);
        }
    }
}

fn crowded() -> Failure {
    Failure {
        cause: format!(
            "{} connections await the broker lookup in flight already",
            super::MAX_WAITERS
        )
        .into(),
        auth: false,
    }
}

/// A connection awaiting another's lookup: counted while it waits.
struct Waiting<'a>(&'a Lookups);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.memory().leave();
    }
}

/// The lookup in flight: if its connection goes away before it ends, the
/// flight is abandoned and a waiter takes over.
struct Leading<'a> {
    lookups: &'a Lookups,
    flight: u64,
    ended: bool,
}

impl Leading<'_> {
    fn finish(mut self, name: &str, outcome: Outcome) {
        let change = self
            .lookups
            .memory()
            .finish(self.flight, Instant::now(), outcome);
        self.ended = true;
        self.lookups.ended.send_modify(|n| *n += 1);
        log(name, change);
    }
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        self.lookups.memory().abandon(self.flight);
        self.lookups.ended.send_modify(|n| *n += 1);
    }
}

fn log(name: &str, change: Option<Change>) {
    let memory_ms = FAILURE_MEMORY.as_millis();
    match change {
        Some(Change::Failing(Failure { cause, auth: true })) => tracing::warn!(
            cluster = %name, error = %cause, memory_ms,
            "broker lookups failing: the upstream refused the proxy's own lookup; connections that need one close at once while the failure is remembered"
        ),
        Some(Change::Failing(Failure { cause, auth: false })) => tracing::warn!(
            cluster = %name, error = %cause, memory_ms,
            "broker lookups failing; connections that need one close at once while the failure is remembered"
        ),
        Some(Change::Recovered(cause)) => {
            tracing::info!(cluster = %name, was = %cause, "broker lookups recovered")
        }
        None => {}
    }
}
