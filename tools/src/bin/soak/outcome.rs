//! Publishing one change through the volume and waiting, by what the proxy
//! and the watcher report (bounded polling of their status and metrics),
//! for how it ended.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use serde::de::DeserializeOwned;
use sluice_admin_api::{Clusters, ConfigStatus, FailureStage, endpoints};
use sluice_testkit::config::version;
use sluice_testkit::http;
use sluice_testkit::volume::Volume;

/// How a published change ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The proxy runs it.
    Applied,
    /// The proxy recorded this version rejected by validation.
    Rejected,
    /// The proxy recorded this version failing to reload.
    Failed,
    /// None of these within the time allowed.
    TimedOut,
}

impl Outcome {
    /// The word used in the report.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Rejected => "rejected",
            Outcome::Failed => "failed",
            Outcome::TimedOut => "timed-out",
        }
    }
}

/// The proxy's admin API and the watcher's metrics.
#[derive(Debug, Clone)]
pub(crate) struct Endpoints {
    /// `127.0.0.1:port` of the proxy's admin API.
    pub(crate) admin: String,
    /// `127.0.0.1:port` of the watcher's metrics.
    pub(crate) watcher: String,
}

/// What one publication showed.
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    /// How it ended.
    pub(crate) outcome: Outcome,
    /// When the volume was swapped (to find the logs' lines of the time).
    pub(crate) at: SystemTime,
    /// From the swap to the outcome.
    pub(crate) took: Duration,
    /// The proxy's words: errors found, or why the reload failed.
    pub(crate) detail: String,
}

/// An answer of the admin API; `None` when it does not answer.
pub(crate) fn admin_get<T: DeserializeOwned>(admin: &str, path: &str) -> Option<T> {
    let r = http::request(admin, "GET", path, &[], b"").ok()?;
    (r.status == 200).then(|| serde_json::from_str(&r.body).ok())?
}

/// Each cluster's current generation, and how many generations still drain.
pub(crate) fn generations(admin: &str) -> Option<(BTreeMap<String, u64>, usize)> {
    let answer: Clusters = admin_get(admin, endpoints::CLUSTERS)?;
    let current = answer
        .clusters
        .iter()
        .map(|c| (c.name.clone(), c.generation))
        .collect();
    let draining = answer.clusters.iter().map(|c| c.draining.len()).sum();
    Some((current, draining))
}

/// Swaps the volume to `text` and waits (at most `timeout`) for the proxy
/// to run it, or to record it rejected or failed. Only what the proxy says
/// about this very version counts: a retry of the previous step failing
/// meanwhile (the watcher backs off and tries again) is not this step's end.
pub(crate) fn publish(
    volume: &mut Volume,
    ends: &Endpoints,
    text: &str,
    timeout: Duration,
) -> Observed {
    let wanted = version(text);
    let before: Option<ConfigStatus> = admin_get(&ends.admin, endpoints::STATUS);
    let (at, started) = (SystemTime::now(), Instant::now());
    volume.swap(text.as_bytes());
    let (outcome, detail) = loop {
        let status: Option<ConfigStatus> = admin_get(&ends.admin, endpoints::STATUS);
        if let Some(ended) = status
            .as_ref()
            .and_then(|now| judge(&wanted, before.as_ref(), now))
        {
            break ended;
        }
        if started.elapsed() >= timeout {
            let last = status.and_then(|s| s.last_reload_attempt);
            break (Outcome::TimedOut, format!("last reload attempt: {last:?}"));
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    Observed {
        outcome,
        at,
        took: started.elapsed(),
        detail,
    }
}

/// How the version `wanted` ended, by the proxy's status `now` (`before`
/// is its status when the step began), with the proxy's words; `None`
/// while it has not ended. Applied when it is in force; rejected or failed
/// only when the proxy recorded a failure of THAT version since `before`.
pub(crate) fn judge(
    wanted: &str,
    before: Option<&ConfigStatus>,
    now: &ConfigStatus,
) -> Option<(Outcome, String)> {
    if now.current_config_version.as_str() == wanted {
        return Some((Outcome::Applied, String::new()));
    }
    let failed = now.last_failed_version.as_ref()?;
    let seen_before = before.and_then(|b| b.last_failed_version.as_ref()) == Some(failed);
    if failed.version.as_str() != wanted || seen_before {
        return None;
    }
    if failed.stage != FailureStage::Validate {
        return Some((Outcome::Failed, failed.reason.clone()));
    }
    let detail = match &now.last_validation_attempt {
        Some(v)
            if v.requested_version
                .as_ref()
                .is_some_and(|r| r.as_str() == wanted) =>
        {
            format!("{} error(s)", v.errors)
        }
        _ => failed.reason.clone(),
    };
    Some((Outcome::Rejected, detail))
}

#[cfg(test)]
mod tests;
