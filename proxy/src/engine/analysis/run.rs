//! The analysis in the background, once the reload committed: the
//! front-door check on the new version against the baseline, then the
//! client signals during each cluster's window against before. It ends at
//! the first finding, when every window has passed, when a newer reload
//! cancels it, or when the proxy stops.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_admin_api::{
    AttemptedVersion, ClientSignals, ClusterAnalysis, Finding, FrontDoor, Verdict,
};
use tokio_util::sync::CancellationToken;

use super::bounded;
use super::plan::{self, Judged};
use crate::config::ValidConfig;
use crate::engine::Engine;

/// One analysis, as its task runs it.
pub(super) struct Job {
    /// Its number.
    pub(super) id: u64,
    /// Cancelled by a newer reload.
    pub(super) cancel: CancellationToken,
    /// The version judged.
    pub(super) version: AttemptedVersion,
    /// The version judged, in force.
    pub(super) new: ValidConfig,
    /// The clusters judged.
    pub(super) judged: Vec<Judged>,
    /// Every cluster's cumulative signals at the commit.
    pub(super) at_commit: BTreeMap<String, ClientSignals>,
    /// Each judged cluster's signals before the change.
    pub(super) before: BTreeMap<String, ClientSignals>,
}

/// What the analysis found.
pub(super) struct Judgement {
    /// Every finding (none: passed).
    pub(super) findings: Vec<Finding>,
    /// The front-door checks on the new version, by cluster.
    pub(super) doors: BTreeMap<String, FrontDoor>,
}

/// The slowest the signals are looked at.
const MAX_TICK: Duration = Duration::from_secs(1);
/// The fastest.
const MIN_TICK: Duration = Duration::from_millis(50);

/// Runs `job` to its verdict, unless cancelled or the proxy stops first.
pub(super) async fn run(engine: Arc<Engine>, job: Job) {
    let cancel = job.cancel.clone();
    let judgement = tokio::select! {
        () = cancel.cancelled() => return,
        judgement = judge(&engine, &job) => judgement,
    };
    if let Some(judgement) = judgement {
        engine.conclude(job, judgement).await;
    }
}

/// The findings of `job`; `None` when the proxy began stopping.
async fn judge(engine: &Engine, job: &Job) -> Option<Judgement> {
    let start = Instant::now();
    let (findings, doors) = after(engine, job).await;
    if !findings.is_empty() {
        return Some(Judgement { findings, doors });
    }
    let mut pending: Vec<&Judged> = Vec::new();
    for j in &job.judged {
        if j.settings.signals.enabled {
            pending.push(j);
        } else {
            engine.cluster_verdict(job.id, &j.name, Verdict::Passed);
        }
    }
    let shortest = pending.iter().map(|j| j.settings.window).min();
    let tick = shortest.map_or(MAX_TICK, |w| (w / 10).clamp(MIN_TICK, MAX_TICK));
    while !pending.is_empty() {
        let next = pending
            .iter()
            .map(|j| j.settings.window)
            .filter(|w| *w > start.elapsed())
            .min()
            .map_or(Duration::ZERO, |w| w - start.elapsed());
        tokio::time::sleep(tick.min(next)).await;
        if engine.is_stopping() {
            return None;
        }
        let findings = signals(engine, job, &pending);
        if !findings.is_empty() {
            return Some(Judgement { findings, doors });
        }
        let elapsed = start.elapsed();
        pending.retain(|j| {
            let done = elapsed >= j.settings.window;
            if done {
                engine.cluster_verdict(job.id, &j.name, Verdict::Passed);
            }
            !done
        });
    }
    Some(Judgement {
        findings: Vec::new(),
        doors,
    })
}

/// The front-door checks on the new version, compared with the baseline.
async fn after(engine: &Engine, job: &Job) -> (Vec<Finding>, BTreeMap<String, FrontDoor>) {
    let observe = &*engine.analyses.observe;
    let checks: Vec<_> = job
        .judged
        .iter()
        .filter(|j| j.settings.front_door.enabled)
        .filter_map(|j| Some((j, job.new.config.cluster(&j.name)?)))
        .collect();
    let results = futures_util::future::join_all(
        checks
            .iter()
            .map(|(j, c)| bounded(observe, c, &j.settings.front_door)),
    )
    .await;
    let mut all = Vec::new();
    let mut doors = BTreeMap::new();
    for ((j, _), result) in checks.iter().zip(results) {
        let (findings, notes, door) = match result {
            Ok(door) => {
                let (findings, notes) = observe.compare(&j.name, j.before.as_ref(), &door);
                (findings, notes, Some(door))
            }
            Err(why) => (Vec::new(), vec![why], None),
        };
        engine.analyses.update(job.id, |a| {
            if let Some(c) = entry(&mut a.clusters, &j.name) {
                c.front_door_after.clone_from(&door);
                c.notes.extend(notes);
                c.findings.extend(findings.iter().cloned());
            }
        });
        if let Some(door) = door {
            doors.insert(j.name.clone(), door);
        }
        all.extend(findings);
    }
    (all, doors)
}

/// The findings of the signals of the `pending` clusters so far.
fn signals(engine: &Engine, job: &Job, pending: &[&Judged]) -> Vec<Finding> {
    let observe = &*engine.analyses.observe;
    let mut all = Vec::new();
    for j in pending {
        let zero = ClientSignals::default();
        let before = job.before.get(&j.name).unwrap_or(&zero);
        let mut during = plan::between(&observe.signals(&j.name), job.at_commit.get(&j.name));
        // Rates over the whole window, however much of it has passed:
        // counts only grow, so a rate already too high over the whole
        // window stays so, and a burst in its first second (a rotation's
        // reconnects) is never extrapolated.
        let window = u64::try_from(j.settings.window.as_millis()).unwrap_or(u64::MAX);
        during.window_ms = during.window_ms.max(window);
        let findings = observe.judge(&j.name, before, &during, &j.settings.signals);
        if !findings.is_empty() {
            engine.analyses.update(job.id, |a| {
                if let Some(c) = entry(&mut a.clusters, &j.name) {
                    c.findings.extend(findings.iter().cloned());
                }
            });
        }
        all.extend(findings);
    }
    all
}

/// The entry of `cluster`.
pub(super) fn entry<'a>(
    clusters: &'a mut [ClusterAnalysis],
    cluster: &str,
) -> Option<&'a mut ClusterAnalysis> {
    clusters.iter_mut().find(|c| c.cluster == cluster)
}

impl Engine {
    /// Records `cluster`'s final verdict in analysis `id` (the analysis'
    /// own verdict is decided when it concludes).
    pub(super) fn cluster_verdict(&self, id: u64, cluster: &str, verdict: Verdict) {
        let shown = self.analyses.update(id, |a| {
            if let Some(c) = entry(&mut a.clusters, cluster) {
                c.verdict = verdict;
            }
        });
        if shown {
            self.analyses.metrics.verdict(cluster, verdict);
        }
    }
}
