//! Publishing one change through the volume and waiting, by what the proxy
//! and the watcher report (bounded polling of their status and metrics),
//! for how it ended.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_tests::config::version;
use sluice_tests::http;
use sluice_tests::volume::Volume;

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

/// A JSON document from the admin API; `None` when it does not answer.
pub(crate) fn admin_json(admin: &str, path: &str) -> Option<Value> {
    let r = http::request(admin, "GET", path, &[], b"").ok()?;
    (r.status == 200).then(|| serde_json::from_str(&r.body).ok())?
}

/// Each cluster's current generation, and how many generations still drain.
pub(crate) fn generations(admin: &str) -> Option<(BTreeMap<String, u64>, usize)> {
    let v = admin_json(admin, "/admin/clusters")?;
    let clusters = v["clusters"].as_array()?;
    let current = clusters
        .iter()
        .map(|c| Some((c["name"].as_str()?.to_owned(), c["generation"].as_u64()?)))
        .collect::<Option<_>>()?;
    let draining = clusters
        .iter()
        .map(|c| c["draining"].as_array().map_or(0, Vec::len))
        .sum();
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
        let status = admin_json(&ends.admin, "/admin/config/status");
        if status
            .as_ref()
            .is_some_and(|s| s["currentConfigVersion"] == *wanted)
        {
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
    let status = admin_json(&ends.admin, "/admin/config/status").unwrap_or_default();
    let detail = match outcome {
        Outcome::Rejected => {
            let v = &status["lastValidationAttempt"];
            if v["requestedVersion"] == *wanted {
                format!("{} error(s)", v["errors"])
            } else {
                format!("the proxy's last validation was not this version: {v}")
            }
        }
        Outcome::Failed | Outcome::TimedOut => status["lastReloadAttempt"]["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        Outcome::Applied => String::new(),
    };
    Observed {
        outcome,
        took,
        detail,
    }
}
