//! Inside a reload: the baseline front-door checks (after prepare, before
//! commit, on the version in force), then, once committed, the start of the
//! analysis. Both run under the reload slot and the analysis state (so no
//! conclusion interleaves with the commit), never under the engine's lock.

use std::collections::BTreeMap;
use std::sync::{Arc, MutexGuard};
use std::time::SystemTime;

use sluice_admin_api::{
    Analysis, AttemptedVersion, ClientSignals, ClusterAnalysis, FrontDoor, Verdict,
};
use tokio_util::sync::CancellationToken;

use super::bounded;
use super::plan::{self, Judged, Unjudged};
use super::run::{Job, run};
use super::state::{LastGood, Running, State};
use crate::config::{ValidConfig, diff};
use crate::engine::{Engine, check, rfc3339};

/// What a reload measured before its commit, holding the analysis state
/// until the analysis starts (or the reload ends without committing).
pub(in crate::engine) struct Baseline<'e> {
    state: MutexGuard<'e, State>,
    judged: Vec<Judged>,
    unjudged: Vec<Unjudged>,
    /// Judged clusters whose baseline was measured now, on the last good
    /// version's configuration of them.
    live: Vec<String>,
}

impl Engine {
    /// The clusters a reload from `current` to `new` is judged on, with
    /// their front door on the version in force: measured now where that
    /// is still the last good version's, else as measured on it before.
    pub(in crate::engine) fn analysis_baseline(
        &self,
        current: &ValidConfig,
        new: &ValidConfig,
    ) -> Baseline<'_> {
        let analyses = &self.analyses;
        let state = analyses.state();
        let last = &state.last_good;
        let observing = analyses.observe.enabled();
        let (mut judged, unjudged) = plan::judged(&last.config.config, &new.config, observing);
        let same = diff(&last.config.config, &current.config).unchanged;
        let mut live = Vec::new();
        let mut checks = Vec::new();
        for (i, j) in judged.iter_mut().enumerate() {
            if !j.settings.front_door.enabled {
                continue;
            }
            match current.config.cluster(&j.name) {
                Some(c) if same.contains(&j.name) => checks.push((i, c)),
                _ => j.before = last.doors.get(&j.name).cloned(),
            }
        }
        let observe = &*analyses.observe;
        let results = if checks.is_empty() {
            Ok(Vec::new())
        } else {
            check::detached(futures_util::future::join_all(
                checks
                    .iter()
                    .map(|(i, c)| bounded(observe, c, &judged[*i].settings.front_door)),
            ))
        };
        match results {
            Ok(results) => {
                for ((i, _), result) in checks.iter().zip(results) {
                    let j = &mut judged[*i];
                    match result {
                        Ok(door) => {
                            j.before = Some(door);
                            live.push(j.name.clone());
                        }
                        Err(why) => j.notes.push(format!("baseline: {why}")),
                    }
                }
            }
            Err(why) => tracing::warn!(error = %why, "baseline front-door checks did not run"),
        }
        Baseline {
            state,
            judged,
            unjudged,
            live,
        }
    }

    /// Starts the analysis of `new`, just committed over `previous`: cancels
    /// the one running, shows the new one, and runs it in the background
    /// (or, when nothing is judged, makes `new` the last good version).
    pub(in crate::engine) fn analysis_start(
        self: &Arc<Self>,
        baseline: Baseline<'_>,
        previous: &ValidConfig,
        new: &ValidConfig,
    ) {
        let Baseline {
            mut state,
            mut judged,
            mut unjudged,
            live,
        } = baseline;
        let analyses = &self.analyses;
        analyses.cancel_running(&mut state);
        let now = self.signals_now(&state.last_good, new);
        let last = &mut state.last_good;
        let until = last.until.get_or_insert_with(|| now.clone()).clone();
        for j in judged.iter().filter(|j| live.contains(&j.name)) {
            if let Some(door) = &j.before {
                last.doors.insert(j.name.clone(), door.clone());
            }
        }
        let runtime = tokio::runtime::Handle::try_current().ok();
        if runtime.is_none() {
            let why = "no runtime to run the analysis on";
            unjudged.extend(judged.drain(..).map(|j| (j.name, why.to_owned())));
        }
        let id = analyses.next_id();
        let version = judged_version(previous, new);
        let mut analysis = Analysis {
            version: version.clone(),
            previous: last.config.version.clone(),
            verdict: Verdict::Running,
            started_at: rfc3339(SystemTime::now()),
            window_ms: window_ms(&judged),
            clusters: clusters(&judged, &unjudged),
            reverted: false,
        };
        for (name, _) in &unjudged {
            analyses.metrics.verdict(name, Verdict::Off);
        }
        let Some(runtime) = runtime.filter(|_| !judged.is_empty()) else {
            // Nothing to judge: the version is good as it is.
            analysis.verdict = Verdict::Off;
            analyses.show(id, analysis);
            promote(&mut state, new, &now, BTreeMap::new());
            return;
        };
        let before = judged
            .iter()
            .map(|j| {
                let at = until.get(&j.name).cloned().unwrap_or_default();
                let window = plan::between(&at, state.last_good.from.get(&j.name));
                (j.name.clone(), window)
            })
            .collect();
        let cancel = CancellationToken::new();
        state.running = Some(Running {
            id,
            cancel: cancel.clone(),
            version: version.clone(),
        });
        analyses.metrics.running(true);
        analyses.show(id, analysis);
        tracing::info!(%version, clusters = judged.len(), "client-side analysis started");
        let job = Job {
            id,
            cancel,
            version,
            new: new.clone(),
            judged,
            at_commit: now,
            before,
        };
        runtime.spawn(run(Arc::clone(self), job));
    }

    /// Every cluster's cumulative signals now (of the last good version and
    /// of `new`).
    fn signals_now(&self, last: &LastGood, new: &ValidConfig) -> BTreeMap<String, ClientSignals> {
        let observe = &self.analyses.observe;
        last.config
            .config
            .virtual_clusters
            .iter()
            .chain(&new.config.virtual_clusters)
            .map(|c| (c.name.to_string(), observe.signals(c.name.as_str())))
            .collect()
    }
}

/// Makes `new` the last good version. A cluster it leaves as it was keeps
/// its signals' start; the others start at `now`.
pub(super) fn promote(
    state: &mut State,
    new: &ValidConfig,
    now: &BTreeMap<String, ClientSignals>,
    doors: BTreeMap<String, FrontDoor>,
) {
    let old = &state.last_good;
    let unchanged = diff(&old.config.config, &new.config).unchanged;
    let from = new
        .config
        .virtual_clusters
        .iter()
        .filter_map(|c| {
            let name = c.name.to_string();
            let start = if unchanged.contains(&name) {
                old.from.get(&name).cloned()?
            } else {
                now.get(&name).cloned().unwrap_or_default()
            };
            Some((name, start))
        })
        .collect();
    state.last_good = LastGood {
        config: new.clone(),
        from,
        until: None,
        doors,
    };
}

/// The version an analysis judges: its bytes' version, or its effective
/// version when only referenced files changed (a renewed certificate).
fn judged_version(previous: &ValidConfig, new: &ValidConfig) -> AttemptedVersion {
    if previous.version == new.version {
        new.referenced.effective_version.clone().into()
    } else {
        new.version.clone().into()
    }
}

/// The longest signal window of the judged clusters, in milliseconds.
fn window_ms(judged: &[Judged]) -> u64 {
    judged
        .iter()
        .filter(|j| j.settings.signals.enabled)
        .map(|j| u64::try_from(j.settings.window.as_millis()).unwrap_or(u64::MAX))
        .max()
        .unwrap_or(0)
}

/// Each changed cluster's entry: running when judged, off with why not.
fn clusters(judged: &[Judged], unjudged: &[Unjudged]) -> Vec<ClusterAnalysis> {
    let running = judged.iter().map(|j| ClusterAnalysis {
        cluster: j.name.clone(),
        verdict: Verdict::Running,
        front_door_before: j.before.clone(),
        front_door_after: None,
        findings: Vec::new(),
        notes: j.notes.clone(),
    });
    let off = unjudged.iter().map(|(name, why)| ClusterAnalysis {
        cluster: name.clone(),
        verdict: Verdict::Off,
        front_door_before: None,
        front_door_after: None,
        findings: Vec::new(),
        notes: vec![why.clone()],
    });
    running.chain(off).collect()
}
