//! Publishing one change through the volume and waiting, by what the proxy
//! and the watcher report (bounded polling of their status and metrics),
//! for how it ended.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use sluice_admin_api::{Clusters, ConfigStatus, endpoints};
use sluice_testkit::config::version;
use sluice_testkit::http;
use sluice_testkit::volume::Volume;

use crate::metrics::Exposition;

/// How a published change ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The proxy runs it.
    Applied,
    /// The watcher counted a validation rejection.
    Rejected,
    /// The watcher gave up on it (retries exhausted).
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

/// The watcher's rejection and failure counts.
fn marks(watcher: &str) -> Option<(f64, f64)> {
    let m = Exposition::scrape(watcher)?;
    Some((
        m.sum("sluice_watcher_validation_rejections_total", &[]),
        m.sum("sluice_watcher_reloads_total", &[("result", "failed")]),
    ))
}

/// Swaps the volume to `text` and waits (at most `timeout`) for the proxy
/// to run it, or the watcher to report it rejected or failed.
pub(crate) fn publish(
    volume: &mut Volume,
    ends: &Endpoints,
    text: &str,
    timeout: Duration,
) -> Observed {
    let wanted = version(text);
    let (rejected, failed) = marks(&ends.watcher).unwrap_or_default();
    let started = Instant::now();
    volume.swap(text.as_bytes());
    let outcome = loop {
        let status: Option<ConfigStatus> = admin_get(&ends.admin, endpoints::STATUS);
        if status.is_some_and(|s| s.current_config_version.as_str() == wanted) {
            break Outcome::Applied;
        }
        match marks(&ends.watcher) {
            Some((r, _)) if r > rejected => break Outcome::Rejected,
            Some((_, f)) if f > failed => break Outcome::Failed,
            _ => {}
        }
        if started.elapsed() >= timeout {
            break Outcome::TimedOut;
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    let took = started.elapsed();
    let status: Option<ConfigStatus> = admin_get(&ends.admin, endpoints::STATUS);
    let detail = match outcome {
        Outcome::Rejected => match status.and_then(|s| s.last_validation_attempt) {
            Some(v)
                if v.requested_version
                    .as_ref()
                    .is_some_and(|r| r.as_str() == wanted) =>
            {
                format!("{} error(s)", v.errors)
            }
            v => format!("the proxy's last validation was not this version: {v:?}"),
        },
        Outcome::Failed | Outcome::TimedOut => status
            .and_then(|s| s.last_reload_attempt)
            .and_then(|r| r.error)
            .unwrap_or_default(),
        Outcome::Applied => String::new(),
    };
    Observed {
        outcome,
        took,
        detail,
    }
}
