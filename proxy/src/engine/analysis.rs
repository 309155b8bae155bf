//! The client-side analysis of a reload: after a reload applies a version
//! that changes clusters, each changed cluster is judged by what its
//! clients see, against the last good version (the last one whose analysis
//! passed or was off); a regression returns the proxy to that version.
//!
//! 1. *Baseline* (inside the reload, after prepare, before commit, bounded,
//!    under no engine lock): the front-door check of each judged cluster on
//!    the version in force.
//! 2. *After* (in the background, once committed: the reload's answer does
//!    not wait): the front-door check on the new version, compared with the
//!    baseline; then the client signals during `window` against before.
//! 3. *Verdict*: `passed` (the version becomes the last good one) or
//!    `regressed`: the last good version's bytes are applied again with the
//!    files exactly as they were read for it, through the reload's own
//!    admit → plan → prepare → commit, under the reload slot.
//!
//! The settings that judge a change are the last good version's. A newer
//! reload that applies cancels the running analysis: that version never
//! becomes last good, and the next one is judged against, and returns to,
//! the last good one.
//!
//! - `plan`: which clusters are judged, signals arithmetic, reasons (pure)
//! - `baseline`: step 1 and the start of the analysis at commit
//! - `run`: step 2, the background task
//! - `conclude`: step 3, passing or reverting
//! - `metrics`: the analysis' metrics and log lines
//! - `state`: the last good version, the analysis running, what status shows

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use sluice_admin_api::{ClientSignals, Finding, FrontDoor};

use crate::config::model::{FrontDoorSettings, SignalSettings, VirtualCluster};
use crate::config::types::format_duration;

mod baseline;
mod conclude;
mod metrics;
mod plan;
mod run;
mod state;

pub(super) use state::Analyses;

/// What the engine observes of its clusters as their clients do: the front
/// door and the client signals. The engine holds one (`Arc<dyn Observe>`,
/// given to [`Engine::start_with`](super::Engine::start_with)); its tests
/// give fakes.
pub trait Observe: Send + Sync + 'static {
    /// Whether anything is observed at all: `false` makes every analysis
    /// `off` (the default [`NoObserve`]).
    fn enabled(&self) -> bool {
        true
    }

    /// The front-door check of `cluster` (as configured in the version in
    /// force now) with the judging version's `settings` (timeout per step,
    /// the trust a client uses). Never fails: a step that does not work is
    /// a step with `ok: false`.
    fn front_door<'a>(
        &'a self,
        cluster: &'a VirtualCluster,
        settings: &'a FrontDoorSettings,
    ) -> BoxFuture<'a, FrontDoor>;

    /// The findings (what worked `before` and not `after`) and notes (what
    /// never worked) of two front-door checks of `cluster`.
    fn compare(
        &self,
        cluster: &str,
        before: Option<&FrontDoor>,
        after: &FrontDoor,
    ) -> (Vec<Finding>, Vec<String>);

    /// The client signals of `cluster`, cumulative since the process
    /// started (`window_ms`: since then).
    fn signals(&self, cluster: &str) -> ClientSignals;

    /// The findings of `cluster`'s signals `during` the window against
    /// `before` the change (both differences of cumulative snapshots),
    /// under the judging version's `settings`.
    fn judge(
        &self,
        cluster: &str,
        before: &ClientSignals,
        during: &ClientSignals,
        settings: &SignalSettings,
    ) -> Vec<Finding>;
}

/// Observes nothing: every analysis is `off`. The engine's default until a
/// real front door and signals are given.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserve;

impl Observe for NoObserve {
    fn enabled(&self) -> bool {
        false
    }

    fn front_door<'a>(
        &'a self,
        _: &'a VirtualCluster,
        _: &'a FrontDoorSettings,
    ) -> BoxFuture<'a, FrontDoor> {
        Box::pin(async { FrontDoor { steps: Vec::new() } })
    }

    fn compare(
        &self,
        _: &str,
        _: Option<&FrontDoor>,
        _: &FrontDoor,
    ) -> (Vec<Finding>, Vec<String>) {
        (Vec::new(), Vec::new())
    }

    fn signals(&self, _: &str) -> ClientSignals {
        ClientSignals::default()
    }

    fn judge(
        &self,
        _: &str,
        _: &ClientSignals,
        _: &ClientSignals,
        _: &SignalSettings,
    ) -> Vec<Finding> {
        Vec::new()
    }
}

/// The default observer.
pub(super) fn no_observe() -> Arc<dyn Observe> {
    Arc::new(NoObserve)
}

/// The most a front-door check may take: three steps and a margin.
fn limit(settings: &FrontDoorSettings) -> Duration {
    settings.timeout * 3 + Duration::from_secs(1)
}

/// The front-door check of `cluster`, or why it did not finish in time.
async fn bounded(
    observe: &dyn Observe,
    cluster: &VirtualCluster,
    settings: &FrontDoorSettings,
) -> Result<FrontDoor, String> {
    let limit = limit(settings);
    tokio::time::timeout(limit, observe.front_door(cluster, settings))
        .await
        .map_err(|_| {
            let limit = format_duration(limit);
            format!("the front-door check did not finish within {limit}")
        })
}
