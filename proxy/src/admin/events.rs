//! The admin API's notable events, each one function that logs it and
//! counts it: a refused caller, a refused connection, and the audit line of
//! every mutating call (SIGHUP reloads included).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use super::auth::Refusal;
use crate::engine::{Attempted, ReloadOutcome};
use crate::metrics::Metrics;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// At most one log line per this long about refused connections (each is
/// counted): a flood must not flood the log too.
const REFUSED_LOG_EVERY: Duration = Duration::from_secs(10);

/// The admin API's metrics, and the functions that report its events.
#[derive(Debug, Clone)]
pub(crate) struct AdminEvents {
    auth_failures: Family<ReasonLabel, Counter>,
    connections_rejected: Counter,
    last_refused_log: Arc<Mutex<Option<Instant>>>,
}

impl AdminEvents {
    /// Registers the admin API's metrics in `metrics`.
    pub(crate) fn new(metrics: &Metrics) -> AdminEvents {
        let e = AdminEvents {
            auth_failures: Family::default(),
            connections_rejected: Counter::default(),
            last_refused_log: Arc::default(),
        };
        metrics.register(
            "admin_auth_failures",
            "Callers of a mutating admin endpoint refused (reason: origin, host, not_loopback, missing_token, wrong_token)",
            e.auth_failures.clone(),
        );
        metrics.register(
            "admin_connections_rejected",
            "Admin API connections closed at once: the cap on open admin connections was reached",
            e.connections_rejected.clone(),
        );
        for refusal in Refusal::ALL {
            e.auth_failures.get_or_create_owned(&ReasonLabel {
                reason: refusal.reason(),
            });
        }
        e
    }

    /// A caller of a mutating endpoint was refused. The token it presented,
    /// if any, is never logged.
    pub(crate) fn refused(&self, peer: SocketAddr, endpoint: &str, refusal: Refusal) {
        let reason = refusal.reason();
        self.auth_failures
            .get_or_create(&ReasonLabel { reason })
            .inc();
        tracing::warn!(%peer, endpoint, reason, "admin call refused");
    }

    /// A connection was closed at once: `open` connections are open, the cap.
    pub(crate) fn connection_refused(&self, peer: SocketAddr, open: usize) {
        self.connections_rejected.inc();
        let mut last = self
            .last_refused_log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.is_none_or(|t| t.elapsed() >= REFUSED_LOG_EVERY) {
            *last = Some(Instant::now());
            tracing::warn!(
                %peer,
                open,
                "admin connection refused: too many open admin connections (counted in sluice_admin_connections_rejected_total)"
            );
        }
    }
}

/// Who made a mutating call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    /// `ip:port` of an HTTP caller, or `signal:SIGHUP`.
    pub(crate) from: String,
    /// The fingerprint of the token it presented (`None`: no token is
    /// configured, or a signal).
    pub(crate) token: Option<String>,
}

/// The audit line of a mutating call: who, from where, which configuration
/// version, which attempt (the number status and the reload's log line
/// carry; none for a call refused before it reached the engine), and how it
/// ended.
pub(crate) fn audit(
    caller: &Caller,
    endpoint: &str,
    version: Option<&str>,
    attempt: Option<u64>,
    outcome: &str,
) {
    tracing::info!(
        target: "sluice_proxy::audit",
        caller = %caller.from,
        token = caller.token.as_deref().unwrap_or("none"),
        endpoint,
        version = version.unwrap_or("none"),
        attempt,
        outcome,
        "admin call"
    );
}

/// The audit line of a reload a SIGHUP asked for (the version status
/// records it under, unless it was refused before it read the file).
pub(crate) fn audit_signal_reload(done: &Attempted) {
    let result = match &done.outcome {
        ReloadOutcome::Applied { changes, .. } if changes.is_empty() => "unchanged",
        ReloadOutcome::Applied { .. } => "applied",
        ReloadOutcome::Unchanged { .. } => "unchanged",
        ReloadOutcome::Rejected { .. } => "rejected",
        ReloadOutcome::PreconditionFailed { .. } => "precondition_failed",
        ReloadOutcome::Failed { .. } => "failed",
        ReloadOutcome::Busy { .. } => "conflict",
        ReloadOutcome::ShuttingDown { .. } => "shutting_down",
    };
    let version = done.version.as_ref().map(|v| v.as_str());
    let caller = Caller {
        from: "signal:SIGHUP".to_owned(),
        token: None,
    };
    audit(&caller, "SIGHUP", version, Some(done.attempt), result);
}
