//! How an analysis ends: passed (its version becomes the last good one), or
//! regressed (the proxy returns to the last good version: its bytes, with
//! its files exactly as they were read for it, through the reload's own
//! admit → plan → prepare → commit, under the reload slot; then the version
//! judged is recorded as failed at `client_check`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use sluice_admin_api::{FailureStage, Finding, FrontDoor, Verdict};

use super::baseline::promote;
use super::plan;
use super::run::{Job, Judgement, entry};
use crate::engine::Engine;
use crate::engine::reload::{Preconditions, ReloadOutcome, Source};

/// The return did not run: a newer version applied meanwhile (it cancelled
/// the analysis).
#[derive(Debug)]
pub(super) struct Superseded;

impl Engine {
    /// Ends `job` with `judgement`.
    pub(super) async fn conclude(self: &Arc<Self>, job: Job, judgement: Judgement) {
        let engine = Arc::clone(self);
        if judgement.findings.is_empty() {
            let passed = tokio::task::spawn_blocking(move || engine.pass(&job, judgement.doors));
            if let Err(e) = passed.await {
                tracing::error!(error = %e, "the client-side analysis could not conclude");
            }
            return;
        }
        let findings = judgement.findings;
        if let Some(first) = findings.first() {
            let previous = self.analyses.shown().map(|a| a.previous.to_string());
            self.analyses.metrics.regressed(
                job.version.as_str(),
                previous.as_deref().unwrap_or(""),
                first,
                findings.len(),
            );
        }
        let job = Arc::new(job);
        let findings = Arc::new(findings);
        loop {
            tokio::select! {
                () = job.cancel.cancelled() => return,
                () = self.reload_slot_free() => {}
            }
            if self.is_stopping() {
                // Nothing commits any more; the next start reads its file.
                return;
            }
            let (engine, job, findings) =
                (Arc::clone(self), Arc::clone(&job), Arc::clone(&findings));
            match tokio::task::spawn_blocking(move || engine.revert(&job, &findings)).await {
                // Another reload took the slot first: wait for it to end.
                Ok(Ok(ReloadOutcome::Busy { .. })) => continue,
                Ok(Ok(_) | Err(Superseded)) => return,
                Err(e) => {
                    tracing::error!(error = %e, "the return to the last good version did not run");
                    return;
                }
            }
        }
    }

    /// Makes the version of `job` the last good one, unless a newer reload
    /// cancelled its analysis.
    fn pass(&self, job: &Job, doors: BTreeMap<String, FrontDoor>) {
        let mut state = self.analyses.state();
        if state.running.as_ref().is_none_or(|r| r.id != job.id) {
            return;
        }
        state.running = None;
        self.analyses.metrics.running(false);
        promote(&mut state, &job.new, &job.at_commit, doors);
        self.analyses
            .update(job.id, |a| a.verdict = Verdict::Passed);
        tracing::info!(version = %job.version, "client-side analysis passed: this is the last good version");
    }

    /// Applies the last good version again, under the reload slot, if the
    /// analysis of `job` still runs; records the outcome before the slot is
    /// free again.
    fn revert(
        self: &Arc<Self>,
        job: &Job,
        findings: &[Finding],
    ) -> Result<ReloadOutcome, Superseded> {
        let last = {
            let state = self.analyses.state();
            match &state.running {
                Some(r) if r.id == job.id => state.last_good.config.clone(),
                _ => return Err(Superseded),
            }
        };
        // Checked again once the slot is held: no reload runs until it is free.
        let still = || {
            let state = self.analyses.state();
            match &state.running {
                Some(r) if r.id == job.id => Ok(Cow::Borrowed(&last.bytes[..])),
                _ => Err(Superseded),
            }
        };
        let pre = Preconditions {
            config: Some(job.new.version.as_str()),
            effective: None,
        };
        let attempted = self.reload_with(still, pre, Source::Revert(&*last.files), |outcome| {
            if !matches!(outcome, ReloadOutcome::Busy { .. }) {
                self.reverted(job, findings, outcome, last.version.as_str());
            }
        })?;
        Ok(attempted.outcome)
    }

    /// Records the end of a regressed analysis: the version judged failed
    /// (`client_check`), the verdict, whether the return applied.
    fn reverted(&self, job: &Job, findings: &[Finding], outcome: &ReloadOutcome, previous: &str) {
        let mut state = self.analyses.state();
        if state.running.as_ref().is_some_and(|r| r.id == job.id) {
            state.running = None;
            self.analyses.metrics.running(false);
        }
        drop(state);
        let applied = matches!(outcome, ReloadOutcome::Applied { .. });
        let mut reason = plan::reason(findings);
        let version = job.version.as_str();
        if applied {
            self.analyses.metrics.reverted(version, previous);
        } else {
            let why = why_not(outcome);
            self.analyses.metrics.revert_failed(version, previous, &why);
            reason.push_str(&format!("; the return to {previous} failed: {why}"));
        }
        self.record_failure(job.version.clone(), FailureStage::ClientCheck, reason);
        let mut verdicts = Vec::new();
        self.analyses.update(job.id, |a| {
            for j in &job.judged {
                let Some(c) = entry(&mut a.clusters, &j.name) else {
                    continue;
                };
                if !c.findings.is_empty() {
                    c.verdict = Verdict::Regressed;
                    verdicts.push((c.cluster.clone(), Verdict::Regressed));
                } else if c.verdict == Verdict::Running {
                    c.verdict = Verdict::Off;
                    c.notes
                        .push("not finished: another cluster regressed first".to_owned());
                    verdicts.push((c.cluster.clone(), Verdict::Off));
                }
            }
            a.verdict = Verdict::Regressed;
            a.reverted = applied;
        });
        for (cluster, verdict) in verdicts {
            self.analyses.metrics.verdict(&cluster, verdict);
        }
    }
}

/// Why a return to the last good version did not apply.
fn why_not(outcome: &ReloadOutcome) -> String {
    match outcome {
        ReloadOutcome::Failed { reason, .. } => reason.clone(),
        ReloadOutcome::Rejected { errors, .. } => {
            format!("its configuration is invalid now: {} errors", errors.len())
        }
        ReloadOutcome::PreconditionFailed { current, .. } => {
            format!("{current} is in force, not the version judged")
        }
        ReloadOutcome::ShuttingDown { .. } => "the proxy is stopping".to_owned(),
        ReloadOutcome::Busy { .. } => "another reload is in progress".to_owned(),
        ReloadOutcome::Applied { .. } | ReloadOutcome::Unchanged { .. } => {
            "nothing to return to: the version judged is in force".to_owned()
        }
    }
}
