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
        self.reload_with(|| read().map(Cow::Owned), Preconditions::default())
    }

    fn reload_with<'b, E>(
        self: &Arc<Self>,
        read: impl FnOnce() -> Result<Cow<'b, [u8]>, E>,
        pre: Preconditions<'_>,
    ) -> Result<Attempted, E> {
        let attempt = self.next_attempt();
        let at = SystemTime::now();
        let start = Instant::now();
        let slot = {
            let mut running = self.running();
            match *running {
                Some((since, _)) => Err(since),
                None => {
                    *running = Some((at, ReloadStage::Validate));
                    Ok(Slot(self))
                }
            }
        };
        let (outcome, requested) = match slot {
            Err(since) => (ReloadOutcome::Busy { since }, None),
            Ok(slot) => {
                let bytes = read()?;
                let outcome = self.reload_exclusive(&bytes, pre, start, &slot);
                if let (ReloadOutcome::Applied { .. }, Some(persist)) =
                    (&outcome, self.persist.get())
                {
                    slot.at(ReloadStage::Persist);
                    persist(&bytes);
                }
                let failed = matches!(
                    outcome,
                    ReloadOutcome::Rejected { .. } | ReloadOutcome::Failed { .. }
                );
                (outcome, Some(self.attempted(&bytes, failed)))
            }
        };
        self.report(&outcome, attempt, at, requested.as_ref(), start.elapsed());
        Ok(Attempted {
            attempt,
            version: requested,
            outcome,
        })
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
