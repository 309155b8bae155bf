//! Prometheus metrics of the webhook, all prefixed `sluice_webhook_`:
//! admissions by result, their latency, and the serving certificate's expiry
//! and reloads. Each notable event is one method that counts it.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A `result` label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ResultLabel {
    /// The outcome, e.g. `denied`.
    pub result: &'static str,
}

/// The process's metrics. Cheap to share: every metric is an `Arc` inside.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    admissions: Family<ResultLabel, Counter>,
    duration: Histogram,
    cert_expiry: Gauge,
    cert_reloads: Family<ResultLabel, Counter>,
    handshake_failures: Counter,
    self_signed_failures: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry with every family registered.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("sluice_webhook");
        let admissions = Family::<ResultLabel, Counter>::default();
        registry.register(
            "admissions",
            "AdmissionReviews answered, by result: allowed (valid configuration), denied \
             (invalid or missing configuration), skipped (not a ConfigMap, DELETE, CONNECT), \
             malformed (HTTP 4xx: not a v1 AdmissionReview, wrong content type, too large), \
             busy (HTTP 429: every review slot taken), error (HTTP 500)",
            admissions.clone(),
        );
        // 0.5 ms to ~4 s: a 1 MiB configuration validates in milliseconds;
        // the API server gives up at timeoutSeconds (at most 5 s here).
        let duration = Histogram::new(exponential_buckets(0.0005, 2.0, 14));
        registry.register(
            "admission_duration_seconds",
            "Time from the request's headers to the answer of POST /validate, body read included",
            duration.clone(),
        );
        let cert_expiry = Gauge::default();
        registry.register(
            "certificate_expiry_timestamp_seconds",
            "notAfter of the serving certificate in use, as Unix time; alert on it minus time()",
            cert_expiry.clone(),
        );
        let cert_reloads = Family::<ResultLabel, Counter>::default();
        registry.register(
            "certificate_reloads",
            "New certificate files seen: applied (new handshakes use them) or rejected \
             (unreadable, not PEM, or certificate and key do not match; the old pair stays)",
            cert_reloads.clone(),
        );
        let handshake_failures = Counter::default();
        registry.register(
            "tls_handshake_failures",
            "TLS handshakes that failed or timed out (a client that does not trust the \
             certificate shows up here)",
            handshake_failures.clone(),
        );
        let self_signed_failures = Counter::default();
        registry.register(
            "self_signed_failures",
            "With --self-signed: passes that failed to read or write the Secret or the \
             ValidatingWebhookConfiguration (API server unreachable, forbidden, conflicts); \
             retried with backoff while the certificate in use keeps serving",
            self_signed_failures.clone(),
        );
        Metrics {
            registry,
            admissions,
            duration,
            cert_expiry,
            cert_reloads,
            handshake_failures,
            self_signed_failures,
        }
    }

    /// One `POST /validate` answered with `result`, taking `elapsed`.
    pub fn admission(&self, result: &'static str, elapsed: Duration) {
        self.admissions.get_or_create(&ResultLabel { result }).inc();
        self.duration.observe(elapsed.as_secs_f64());
    }

    /// A certificate is now served; `not_after` is its expiry in Unix seconds.
    pub fn certificate_in_use(&self, not_after: i64) {
        self.cert_expiry.set(not_after);
    }

    /// New certificate files were `applied` or `rejected`.
    pub fn certificate_reload(&self, result: &'static str) {
        self.cert_reloads
            .get_or_create(&ResultLabel { result })
            .inc();
    }

    /// A TLS handshake failed.
    pub fn handshake_failed(&self) {
        self.handshake_failures.inc();
    }

    /// A pass of the self-signed mode failed.
    pub fn self_signed_failure(&self) {
        self.self_signed_failures.inc();
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_exposed_with_their_names() {
        let m = Metrics::new();
        m.admission("denied", Duration::from_millis(3));
        m.certificate_in_use(1_800_000_000);
        m.certificate_reload("rejected");
        let text = m.encode();
        for line in [
            "sluice_webhook_admissions_total{result=\"denied\"} 1",
            "sluice_webhook_admission_duration_seconds_count 1",
            "sluice_webhook_certificate_expiry_timestamp_seconds 1800000000",
            "sluice_webhook_certificate_reloads_total{result=\"rejected\"} 1",
            "sluice_webhook_tls_handshake_failures_total 0",
            "sluice_webhook_self_signed_failures_total 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
    }
}
