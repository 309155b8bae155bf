//! Reload: validate → diff → upstream check → prepare → commit → persist →
//! drain.
//!
//! Everything that can fail happens before anything running is touched: a
//! bad or failing configuration changes nothing. Unchanged clusters are not
//! touched at all. At most one reload runs at a time, and no lock is held
//! while it validates, checks upstreams or prepares: admin reads see the
//! state before or after it, never wait for it. Under `startupPolicy:
//! best-effort`, a cluster that is not serving (added, or failed before) and
//! cannot start is recorded as failed instead of failing the reload.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use sluice_admin_api::ReloadStage;

use super::Engine;

mod apply;
mod outcome;
mod plan;
mod report;
mod slot;

pub use outcome::{Attempted, Preconditions, ReloadOutcome};
use slot::Slot;

/// What a reload applies: a new version, or the last good one again.
#[derive(Clone, Copy)]
pub(super) enum Source<'a> {
    /// New bytes, their files read from the engine's file source; upstreams
    /// checked, then judged by the client-side analysis.
    New,
    /// The last good version's bytes, with the files exactly as they were
    /// read for it (its snapshot): a return after a regression. No upstream
    /// check (it ran before, whatever the upstream answers now) and no
    /// analysis of its own.
    Revert(&'a dyn crate::config::FileSource),
}

/// How long a reload waits for the ports it released to be free.
const PORT_RELEASE_TIMEOUT: Duration = Duration::from_secs(1);

impl Engine {
    fn running(&self) -> std::sync::MutexGuard<'_, Option<(SystemTime, ReloadStage)>> {
        self.reloading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `bytes` as the new configuration, if `if_match` (when given)
    /// is the version in force; once applied, persists them (see
    /// [`Engine::set_persist`]) before answering.
    pub fn reload(self: &Arc<Self>, bytes: &[u8], if_match: Option<&str>) -> ReloadOutcome {
        let pre = Preconditions {
            config: if_match,
            effective: None,
        };
        self.reload_if(bytes, pre)
    }

    /// Like [`Engine::reload`], under every precondition `pre` names.
    pub fn reload_if(self: &Arc<Self>, bytes: &[u8], pre: Preconditions<'_>) -> ReloadOutcome {
        self.attempt_reload(bytes, pre).outcome
    }

    /// Like [`Engine::reload_if`], with the attempt's number and version.
    pub fn attempt_reload(self: &Arc<Self>, bytes: &[u8], pre: Preconditions<'_>) -> Attempted {
        match self.reload_with(
            || Ok::<_, std::convert::Infallible>(Cow::Borrowed(bytes)),
            pre,
            Source::New,
            |_| {},
        ) {
            Ok(outcome) => outcome,
            Err(never) => match never {},
        }
    }

    /// Like [`Engine::reload`] with the bytes `read` returns, read only once
    /// this reload holds the slot: a SIGHUP reads the file after any reload
    /// before it has applied (and persisted), so it can never apply older
    /// bytes over a newer reload. A failed read changes nothing.
    pub fn reload_reading<E>(
        self: &Arc<Self>,
        read: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<Attempted, E> {
        self.reload_with(
            || read().map(Cow::Owned),
            Preconditions::default(),
            Source::New,
            |_| {},
        )
    }

    /// One reload of the bytes `read` returns once the slot is held (an
    /// error there ends it with nothing recorded), from `source`; `finish`
    /// sees the outcome after it is recorded, before the slot is free.
    pub(super) fn reload_with<'b, E>(
        self: &Arc<Self>,
        read: impl FnOnce() -> Result<Cow<'b, [u8]>, E>,
        pre: Preconditions<'_>,
        source: Source<'_>,
        finish: impl FnOnce(&ReloadOutcome),
    ) -> Result<Attempted, E> {
        let attempt = self.next_attempt();
        let at = SystemTime::now();
        let start = Instant::now();
        let slot = match self.take_slot(at) {
            Ok(slot) => slot,
            Err(since) => {
                let outcome = ReloadOutcome::Busy { since };
                self.report(&outcome, attempt, at, None, start.elapsed());
                finish(&outcome);
                return Ok(Attempted {
                    attempt,
                    version: None,
                    outcome,
                });
            }
        };
        let bytes = read()?;
        let outcome = self.reload_exclusive(&bytes, pre, start, &slot, source);
        if let (ReloadOutcome::Applied { .. }, Some(persist)) = (&outcome, self.persist.get()) {
            slot.at(ReloadStage::Persist);
            persist(&bytes);
        }
        let failed = matches!(
            outcome,
            ReloadOutcome::Rejected { .. } | ReloadOutcome::Failed { .. }
        );
        let requested = self.attempted(&bytes, failed, source);
        // Recorded while the slot is held: whoever waits for it finds the
        // attempt in status.
        self.report(&outcome, attempt, at, Some(&requested), start.elapsed());
        finish(&outcome);
        drop(slot);
        Ok(Attempted {
            attempt,
            version: Some(requested),
            outcome,
        })
    }

    /// The one-reload-at-a-time slot, or when the reload holding it started.
    fn take_slot(&self, at: SystemTime) -> Result<Slot<'_>, SystemTime> {
        let mut running = self.running();
        match *running {
            Some((since, _)) => Err(since),
            None => {
                *running = Some((at, ReloadStage::Validate));
                Ok(Slot(self))
            }
        }
    }

    /// Waits until no reload runs (at once when none does), for a caller
    /// refused with [`ReloadOutcome::Busy`] that must not give up: a SIGHUP.
    pub async fn reload_slot_free(&self) {
        let ended = self.reload_ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        if self.running().is_some() {
            ended.await;
        }
    }
}
