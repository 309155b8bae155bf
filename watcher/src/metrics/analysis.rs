//! The client-side analysis as this watcher follows it (its own proxy's, of
//! each version it applies): one function per notable event, logging it and
//! counting it.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct VerdictLabel {
    verdict: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct VersionVerdict {
    version: String,
    verdict: &'static str,
}

/// How an analysis this watcher followed ended: a verdict, or
/// `timed_out` (none within the window and the margin).
pub const ENDS: [&str; 4] = ["passed", "regressed", "off", "timed_out"];

/// The analysis' metrics.
#[derive(Debug, Default)]
pub struct AnalysisMetrics {
    info: Family<VersionVerdict, Gauge>,
    ended: Family<VerdictLabel, Counter>,
}

impl AnalysisMetrics {
    /// Registers them (under the watcher's prefix); every end exists at 0
    /// from the start, so that an alert on `increase()` sees the first.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "analysis_info",
            "The proxy's client-side analysis of the version this watcher applied last, by version and verdict (running, passed, regressed, off, timed_out; none: the proxy reports no analysis of it); value 1",
            self.info.clone(),
        );
        registry.register(
            "analyses",
            "Client-side analyses of a version this watcher applied, by how they ended (passed, regressed, off, timed_out)",
            self.ended.clone(),
        );
        for verdict in ENDS {
            self.ended.get_or_create_owned(&VerdictLabel { verdict });
        }
    }

    fn info(&self, version: &str, verdict: &'static str) {
        self.info.clear();
        self.info
            .get_or_create(&VersionVerdict {
                version: version.to_owned(),
                verdict,
            })
            .set(1);
    }

    /// Its proxy analyses `version`: the watcher waits for the verdict.
    pub fn running(&self, version: &str) {
        self.info(version, "running");
        tracing::info!(
            version,
            "the proxy analyses the version by what its clients see; waiting for the verdict"
        );
    }

    /// Its proxy reports no analysis of `version` (a proxy without it, or
    /// a version that changed no cluster).
    pub fn none(&self, version: &str) {
        self.info(version, "none");
    }

    /// The analysis of `version` ended (`verdict`: one of [`ENDS`]);
    /// `cause` says what got worse, for a regression.
    pub fn ended(&self, version: &str, verdict: &'static str, cause: Option<&str>) {
        self.info(version, verdict);
        self.ended.get_or_create(&VerdictLabel { verdict }).inc();
        match verdict {
            "regressed" => tracing::warn!(
                version,
                cause,
                "the proxy's client-side check found a regression: it returned to the version before"
            ),
            "timed_out" => tracing::warn!(
                version,
                "no verdict of the proxy's client-side analysis within its window: not halting"
            ),
            _ => tracing::info!(version, verdict, "client-side analysis over"),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::metrics::Metrics;

    #[test]
    fn every_end_counts_from_zero_and_the_info_shows_the_last_verdict_only() {
        let m = Metrics::new();
        m.analysis.none("sha256:00");
        let text = m.encode();
        assert!(
            text.contains("sluice_watcher_analyses_total{verdict=\"regressed\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE sluice_watcher_analysis_info gauge"),
            "{text}"
        );
        assert!(
            text.contains("sluice_watcher_analysis_info{version=\"sha256:00\",verdict=\"none\"} 1"),
            "{text}"
        );
        m.analysis.running("sha256:ab");
        let text = m.encode();
        assert!(
            text.contains(
                "sluice_watcher_analysis_info{version=\"sha256:ab\",verdict=\"running\"} 1"
            ),
            "{text}"
        );
        m.analysis
            .ended("sha256:ab", "regressed", Some("virtual cluster orders: …"));
        let text = m.encode();
        assert!(
            text.contains(
                "sluice_watcher_analysis_info{version=\"sha256:ab\",verdict=\"regressed\"} 1"
            ),
            "{text}"
        );
        assert!(!text.contains("verdict=\"running\"} 1"), "{text}");
        assert!(
            text.contains("sluice_watcher_analyses_total{verdict=\"regressed\"} 1"),
            "{text}"
        );
    }
}
