//! The watcher's metrics and its notable events: each is one function that
//! logs the event and counts it.

use std::time::{Duration, SystemTime};

pub mod analysis;
pub mod fleet;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct VersionLabel {
    version: String,
}

/// Every metric of the watcher.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    swaps: Counter,
    reloads: Family<ResultLabel, Counter>,
    rejections: Counter,
    retries: Counter,
    last_success: Gauge<f64, std::sync::atomic::AtomicU64>,
    applied: Family<VersionLabel, Gauge>,
    lag: Histogram,
    /// The fleet rollout's metrics (slot, peers, halt).
    pub fleet: fleet::FleetMetrics,
    /// The client-side analysis of each version applied (its verdict).
    pub analysis: analysis::AnalysisMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry with every metric registered.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("sluice_watcher");
        let m = Metrics {
            registry: Registry::default(),
            swaps: Counter::default(),
            reloads: Family::default(),
            rejections: Counter::default(),
            retries: Counter::default(),
            last_success: Gauge::default(),
            applied: Family::default(),
            lag: Histogram::new(exponential_buckets(0.01, 2.0, 14)),
            fleet: fleet::FleetMetrics::default(),
            analysis: analysis::AnalysisMetrics::default(),
        };
        registry.register("swaps", "New file contents seen", m.swaps.clone());
        registry.register(
            "reloads",
            "Apply attempts by result (applied, unchanged, rejected, failed)",
            m.reloads.clone(),
        );
        registry.register(
            "validation_rejections",
            "Contents the proxy found invalid",
            m.rejections.clone(),
        );
        registry.register(
            "retries",
            "Calls to the proxy retried after a failure",
            m.retries.clone(),
        );
        registry.register(
            "last_success_timestamp_seconds",
            "When a content was last applied or found already in force (Unix time)",
            m.last_success.clone(),
        );
        registry.register(
            "applied_version_info",
            "The version last applied (value 1)",
            m.applied.clone(),
        );
        registry.register(
            "propagation_lag_seconds",
            "From kubelet writing a version (its ..<timestamp> directory) to the proxy applying it",
            m.lag.clone(),
        );
        m.fleet.register(&mut registry);
        m.analysis.register(&mut registry);
        // Every result exists from the start, at 0: an alert on
        // `increase(...{result="failed"})` sees the first failure too.
        for result in ["applied", "unchanged", "rejected", "failed"] {
            m.reloads.get_or_create_owned(&ResultLabel { result });
        }
        Metrics { registry, ..m }
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    fn result(&self, result: &'static str) {
        self.reloads.get_or_create(&ResultLabel { result }).inc();
    }

    fn success(&self) {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        self.last_success.set(now.as_secs_f64());
    }

    /// New content appeared in the file.
    pub fn swap_seen(&self, digest: &str, data_dir: Option<&str>) {
        self.swaps.inc();
        tracing::info!(version = digest, data_dir, "new configuration content");
    }

    /// The proxy now runs `version`.
    pub fn applied(&self, version: &str, lag: Option<Duration>) {
        self.result("applied");
        self.success();
        self.applied.clear();
        self.applied
            .get_or_create(&VersionLabel {
                version: version.to_owned(),
            })
            .set(1);
        if let Some(lag) = lag {
            self.lag.observe(lag.as_secs_f64());
        }
        tracing::info!(
            version,
            lag_ms = lag.map(|l| l.as_millis() as u64),
            "configuration applied"
        );
    }

    /// The proxy already runs `version`.
    pub fn unchanged(&self, version: &str) {
        self.result("unchanged");
        self.success();
        self.applied.clear();
        self.applied
            .get_or_create(&VersionLabel {
                version: version.to_owned(),
            })
            .set(1);
        tracing::info!(version, "proxy already runs this configuration");
    }

    /// The proxy found `version` invalid; it will not be retried.
    pub fn rejected(&self, version: &str, errors: &[String]) {
        self.result("rejected");
        self.rejections.inc();
        tracing::warn!(
            version,
            errors = errors.len(),
            "configuration rejected by the proxy; keeping the current one and waiting for new content"
        );
        for e in errors.iter().take(20) {
            tracing::warn!(version, error = %e, "configuration error");
        }
    }

    /// Applying `version` failed for good (retries exhausted or refused).
    pub fn failed(&self, version: &str, reason: &str) {
        self.result("failed");
        tracing::error!(
            version,
            error = reason,
            "could not apply the configuration; will try again at the next change or resync"
        );
    }

    /// A call to the proxy will be retried.
    pub fn retry(&self, reason: &str, wait: Duration) {
        self.retries.inc();
        tracing::warn!(
            error = reason,
            wait_ms = wait.as_millis() as u64,
            "proxy call failed; retrying"
        );
    }
}
