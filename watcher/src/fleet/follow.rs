//! Following this pod's proxy's client-side analysis of a version it just
//! applied: the proxy judges the version by what its clients see and, on a
//! regression, returns to the version before by itself and records the new
//! one as failed (`client_check`). The watcher polls its own proxy's status
//! until the verdict is in, bounded by the analysis window and a margin,
//! so that a regression halts the rollout here at once (metric, log, Event)
//! rather than at the next resync. Newer content cuts the wait short.
//!
//! [`judge`] is the decision, pure; [`follow`] polls.

use std::time::{Duration, Instant};

use sluice_admin_api::{AttemptedVersion, ConfigStatus, ConfigVersion, FailureStage, Verdict};
use tokio::sync::watch;

use super::gate::PeerAnalysis;
use super::peers::peer_analysis;
use super::rollout::Rollout;
use crate::client::ProxyClient;
use crate::decide::Memory;
use crate::heartbeat::Heartbeat;
use crate::metrics::Metrics;
use crate::volume::Content;

/// How long an analysis of the version applied may take to appear in the
/// proxy's status (it starts at the commit) before the watcher concludes
/// that none runs (switched off, or a proxy without it).
pub const GRACE: Duration = Duration::from_secs(5);

/// Beyond the analysis window: the front-door check after the commit (a
/// timeout per step) and a revert.
pub const MARGIN: Duration = Duration::from_secs(30);

/// What one status read says of the analysis of the version applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// No verdict yet: poll again.
    Pending,
    /// The verdict: passed, or off.
    Verdict(Verdict),
    /// A regression: the proxy failed the version; why (which cluster,
    /// which step or signal, before and after).
    Regressed(String),
    /// Nothing to follow (no analysis of the version, or it was superseded).
    Nothing(&'static str),
    /// No verdict within the window and the margin.
    TimedOut,
}

/// What `status`, read `waited` after the reload of `applied` (whose
/// configuration is `config`) returned, says of its analysis; `grace`: how
/// long an analysis may take to appear ([`GRACE`] after a reload, zero for
/// a version found in force).
pub fn judge(
    applied: &AttemptedVersion,
    config: &ConfigVersion,
    status: &ConfigStatus,
    waited: Duration,
    grace: Duration,
) -> Judged {
    let analysis = status
        .analysis
        .as_ref()
        .map(peer_analysis)
        .filter(|a| a.version == *applied || a.version == *config);
    let failed = status
        .last_failed_version
        .as_ref()
        .filter(|f| f.version == *applied && f.stage == FailureStage::ClientCheck);
    if let Some(f) = failed {
        let cause = match &analysis {
            Some(a) => a.cause(&f.reason),
            None => format!("client-side check failed: {}", f.reason),
        };
        return Judged::Regressed(cause);
    }
    if let Some(a) = &analysis {
        return match a.verdict {
            Verdict::Regressed => Judged::Regressed(a.cause("")),
            Verdict::Running => {
                let window = status
                    .analysis
                    .as_ref()
                    .map_or(Duration::ZERO, |a| Duration::from_millis(a.window_ms));
                if waited > window + MARGIN {
                    Judged::TimedOut
                } else {
                    Judged::Pending
                }
            }
            verdict => Judged::Verdict(verdict),
        };
    }
    let runs = status.current_config_version == *config
        && (*applied == *config || *applied == status.effective_version);
    if !runs {
        return Judged::Nothing("its proxy runs another version");
    }
    if waited < grace {
        return Judged::Pending;
    }
    Judged::Nothing("its proxy reports no client-side analysis of the version")
}

/// How following ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Followed {
    /// What the last status read said (never [`Judged::Pending`]).
    Judged(Judged),
    /// Newer content arrived first: take it.
    Superseded(Content),
}

/// Polls `own` every `poll` until [`judge`] says more than
/// [`Judged::Pending`], beating `heartbeat`; newer content on `rx` ends it.
/// A status call that fails is tried again at the next poll (the bound
/// still holds).
pub async fn follow(
    own: &ProxyClient,
    poll: Duration,
    heartbeat: &Heartbeat,
    rx: &mut watch::Receiver<Content>,
    (applied, config): (&AttemptedVersion, &ConfigVersion),
    grace: Duration,
    metrics: &Metrics,
) -> Followed {
    let started = Instant::now();
    let mut said = false;
    loop {
        heartbeat.beat();
        let waited = started.elapsed();
        let judged = match own.status().await {
            Ok(status) => judge(applied, config, &status, waited, grace),
            // Its proxy does not answer: no verdict will come through it.
            Err(_) if waited > MARGIN => Judged::TimedOut,
            Err(_) => Judged::Pending,
        };
        if judged != Judged::Pending {
            return Followed::Judged(judged);
        }
        if !said {
            said = true;
            metrics.analysis.running(applied.as_str());
        }
        tokio::select! {
            () = tokio::time::sleep(poll) => {}
            changed = rx.changed() => {
                if changed.is_ok() {
                    return Followed::Superseded(rx.borrow_and_update().clone());
                }
            }
        }
    }
}

/// How following the analysis of a version ended, for the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterApply {
    /// Nothing more to do.
    Done,
    /// A regression halted the rollout here: the Event's message (the
    /// version, and why).
    Halted(String),
    /// Newer content arrived first: take it.
    Superseded(Content),
}

/// After this pod's proxy applied `config` (`found`: it was found in force,
/// not applied now), follows its analysis (see the module documentation);
/// a regression halts the rollout here (the metric, the log line "rollout
/// halted" with the cause).
pub async fn after_apply(
    rollout: &mut Rollout,
    (own, metrics, heartbeat): (&ProxyClient, &Metrics, &Heartbeat),
    rx: &mut watch::Receiver<Content>,
    memory: &mut Memory,
    config: &ConfigVersion,
    found: bool,
) -> AfterApply {
    let applied = memory.attempted(config);
    let grace = if found { Duration::ZERO } else { GRACE };
    let poll = rollout.poll();
    let followed = follow(own, poll, heartbeat, rx, (&applied, config), grace, metrics).await;
    let version = applied.as_str();
    match followed {
        Followed::Superseded(newer) => AfterApply::Superseded(newer),
        Followed::Judged(Judged::Regressed(cause)) => {
            metrics.analysis.ended(version, "regressed", Some(&cause));
            rollout.failed_here(metrics, memory, config, &cause);
            AfterApply::Halted(format!("proxy configuration {version} failed: {cause}"))
        }
        Followed::Judged(Judged::Verdict(verdict)) => {
            metrics.analysis.ended(version, verdict.as_str(), None);
            AfterApply::Done
        }
        Followed::Judged(Judged::TimedOut) => {
            metrics.analysis.ended(version, "timed_out", None);
            AfterApply::Done
        }
        Followed::Judged(Judged::Nothing(why)) => {
            tracing::debug!(version, why, "no client-side analysis to follow");
            metrics.analysis.none(version);
            AfterApply::Done
        }
        // `follow` never ends pending.
        Followed::Judged(Judged::Pending) => AfterApply::Done,
    }
}

/// A finding as the fleet view prints it: the first, and how many more.
pub fn first_finding(a: &PeerAnalysis) -> Option<String> {
    let first = a.findings.first()?;
    Some(match a.findings.len() {
        1 => first.clone(),
        n => format!("{first} (and {} more)", n - 1),
    })
}

#[cfg(test)]
mod tests;
