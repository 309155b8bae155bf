//! The analysis' notable events, each logged and counted in one place:
//! `sluice_analysis_verdicts_total{cluster,verdict}`,
//! `sluice_analysis_reverts_total`, `sluice_analysis_running`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use sluice_admin_api::{Finding, Verdict};

use crate::metrics::Metrics;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct VerdictLabels {
    cluster: String,
    verdict: &'static str,
}

/// The analysis' metrics.
#[derive(Debug, Clone)]
pub(super) struct AnalysisMetrics {
    verdicts: Family<VerdictLabels, Counter>,
    reverts: Counter,
    running: Gauge,
}

impl AnalysisMetrics {
    pub(super) fn new(metrics: &Metrics) -> Self {
        let m = AnalysisMetrics {
            verdicts: Family::default(),
            reverts: Counter::default(),
            running: Gauge::default(),
        };
        metrics.register(
            "analysis_verdicts",
            "Final verdicts of the client-side analysis, per changed cluster (passed, regressed, off)",
            m.verdicts.clone(),
        );
        metrics.register(
            "analysis_reverts",
            "Returns to the last good version after a regression found by the client-side analysis",
            m.reverts.clone(),
        );
        metrics.register(
            "analysis_running",
            "1 while a client-side analysis runs",
            m.running.clone(),
        );
        m
    }

    /// `cluster`'s analysis ended with `verdict`.
    pub(super) fn verdict(&self, cluster: &str, verdict: Verdict) {
        let labels = VerdictLabels {
            cluster: cluster.to_owned(),
            verdict: verdict.as_str(),
        };
        self.verdicts.get_or_create(&labels).inc();
        tracing::info!(
            cluster,
            verdict = verdict.as_str(),
            "client-side analysis verdict"
        );
    }

    /// Whether an analysis runs now.
    pub(super) fn running(&self, running: bool) {
        self.running.set(i64::from(running));
    }

    /// The proxy found `first` (of `count` findings) in `version` and
    /// returns to `previous`.
    pub(super) fn regressed(&self, version: &str, previous: &str, first: &Finding, count: usize) {
        tracing::warn!(
            cluster = %first.cluster,
            step = %first.step,
            before = %first.before,
            after = %first.after,
            findings = count,
            %version,
            %previous,
            "client-side analysis found a regression: returning to the last good version"
        );
    }

    /// The proxy is back on `previous`.
    pub(super) fn reverted(&self, version: &str, previous: &str) {
        self.reverts.inc();
        tracing::warn!(%version, %previous, "returned to the last good version; the version judged is recorded as failed (client_check)");
    }

    /// The return to `previous` did not apply.
    pub(super) fn revert_failed(&self, version: &str, previous: &str, why: &str) {
        tracing::error!(%version, %previous, error = %why, "could not return to the last good version; the version judged stays in force and is recorded as failed (client_check)");
    }
}
