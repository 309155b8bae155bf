//! What the engine keeps of the analysis: the last good version (what a
//! regression returns to, and whose settings judge), the analysis running,
//! and what status shows.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use sluice_admin_api::{Analysis, AttemptedVersion, ClientSignals, FrontDoor};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Observe;
use super::metrics::AnalysisMetrics;
use crate::config::ValidConfig;
use crate::metrics::Metrics;

/// The analysis' part of the engine.
pub(crate) struct Analyses {
    pub(super) observe: Arc<dyn Observe>,
    pub(super) metrics: AnalysisMetrics,
    /// Held by a reload from its baseline to the start of its analysis
    /// (both under the reload slot), and by an analysis that concludes: a
    /// conclusion and a reload's commit never interleave. Never taken by a
    /// status read.
    state: Mutex<State>,
    /// What status shows, with the number of the analysis it belongs to (a
    /// cancelled analysis' task can no longer change it).
    shown: watch::Sender<(u64, Option<Analysis>)>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Analyses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyses").finish_non_exhaustive()
    }
}

/// The last good version and the analysis running.
pub(super) struct State {
    pub(super) last_good: LastGood,
    pub(super) running: Option<Running>,
}

/// The last version whose analysis passed or was off (at first, the one
/// the process started with).
pub(super) struct LastGood {
    /// Its bytes, and its files as they were read for it.
    pub(super) config: ValidConfig,
    /// Each cluster's cumulative signals when it went in force (absent:
    /// zero, the process' start).
    pub(super) from: BTreeMap<String, ClientSignals>,
    /// Each cluster's cumulative signals when a version after it was first
    /// committed (`None` while it is the version in force): its signals
    /// "before" any change are those between `from` and here.
    pub(super) until: Option<BTreeMap<String, ClientSignals>>,
    /// Front-door checks measured on it, by cluster: the baseline of a
    /// later change when the version in force is no longer it.
    pub(super) doors: BTreeMap<String, FrontDoor>,
}

/// The analysis running.
pub(super) struct Running {
    /// Its number (also in `shown`).
    pub(super) id: u64,
    /// Cancelled when a newer reload applies, or the analysis ends.
    pub(super) cancel: CancellationToken,
    /// The version judged.
    pub(super) version: AttemptedVersion,
}

impl Analyses {
    /// The analysis of a process started with `config`, observing through
    /// `observe`.
    pub(crate) fn new(metrics: &Metrics, observe: Arc<dyn Observe>, config: &ValidConfig) -> Self {
        Analyses {
            observe,
            metrics: AnalysisMetrics::new(metrics),
            state: Mutex::new(State {
                last_good: LastGood {
                    config: config.clone(),
                    from: BTreeMap::new(),
                    until: None,
                    doors: BTreeMap::new(),
                },
                running: None,
            }),
            shown: watch::Sender::new((0, None)),
            next_id: AtomicU64::new(1),
        }
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A number for a new analysis.
    pub(super) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The analysis of the last version applied, as status shows it.
    pub(crate) fn shown(&self) -> Option<Analysis> {
        self.shown.borrow().1.clone()
    }

    /// Follows what status shows (tests await a verdict on it).
    #[cfg(test)]
    pub(crate) fn subscribe(&self) -> watch::Receiver<(u64, Option<Analysis>)> {
        self.shown.subscribe()
    }

    /// Shows a new analysis, number `id`.
    pub(super) fn show(&self, id: u64, analysis: Analysis) {
        self.shown.send_replace((id, Some(analysis)));
    }

    /// Changes what analysis `id` shows, unless another one replaced it.
    /// Returns whether it was still shown.
    pub(super) fn update(&self, id: u64, change: impl FnOnce(&mut Analysis)) -> bool {
        let mut current = false;
        self.shown.send_if_modified(|(shown, analysis)| {
            match analysis.as_mut().filter(|_| *shown == id) {
                Some(a) => {
                    change(a);
                    current = true;
                    true
                }
                None => false,
            }
        });
        current
    }

    /// Ends the analysis running (a newer reload applied, or the proxy
    /// returned to the last good version).
    pub(super) fn cancel_running(&self, state: &mut State) {
        if let Some(running) = state.running.take() {
            running.cancel.cancel();
            self.metrics.running(false);
            tracing::info!(version = %running.version, "client-side analysis cancelled: a newer version applied");
        }
    }
}
