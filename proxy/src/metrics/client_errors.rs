//! Errors a client causes (a frame that is not Kafka, one over the size
//! limit, a version the proxy does not serve, a frame left unfinished):
//! each is counted in `sluice_client_errors_total{cluster,cause}` and
//! warned about at most once per cause per [`WARN_EVERY`] per cluster, the
//! next line saying how many were not, so that a client sending garbage in
//! a loop cannot flood the log.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// What a client did wrong: a bounded label, not free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientCause {
    /// A frame that is not Kafka (its length or header unreadable, or a
    /// request the proxy had to decode and could not).
    Malformed,
    /// A frame over `limits.maxFrameBytes`.
    TooLarge,
    /// A request at a version the proxy does not serve.
    UnsupportedVersion,
    /// A frame started and not finished within `limits.frameTimeout`.
    FrameTimeout,
    /// A client without a principal where `authentication.required` is set.
    NoPrincipal,
    /// A client that failed to authenticate with the proxy (or skipped it).
    Unauthenticated,
}

impl ClientCause {
    /// Every cause, in the order of the limiter's windows.
    pub(crate) const ALL: [ClientCause; 6] = [
        ClientCause::Malformed,
        ClientCause::TooLarge,
        ClientCause::UnsupportedVersion,
        ClientCause::FrameTimeout,
        ClientCause::NoPrincipal,
        ClientCause::Unauthenticated,
    ];

    /// Its name, in the metric and the log.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ClientCause::Malformed => "malformed",
            ClientCause::TooLarge => "too_large",
            ClientCause::UnsupportedVersion => "unsupported_version",
            ClientCause::FrameTimeout => "frame_timeout",
            ClientCause::NoPrincipal => "no_principal",
            ClientCause::Unauthenticated => "unauthenticated",
        }
    }
}

/// At most one warning per cause per this long, per cluster.
pub(crate) const WARN_EVERY: Duration = Duration::from_secs(10);

/// When each cause was last warned about, and how many since were not.
#[derive(Debug, Default)]
pub(crate) struct WarnLimiter {
    windows: [Mutex<Window>; ClientCause::ALL.len()],
}

#[derive(Debug, Default)]
struct Window {
    last: Option<Instant>,
    suppressed: u64,
}

impl WarnLimiter {
    /// Whether a warning of `cause` at `now` is logged: `Some(n)`, `n`
    /// being how many were not since the last one; `None` when it is not
    /// (it is counted for the next).
    pub(crate) fn admit(&self, cause: ClientCause, now: Instant) -> Option<u64> {
        let i = ClientCause::ALL.iter().position(|c| *c == cause)?;
        let mut w = self.windows[i]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if w.last
            .is_some_and(|last| now.duration_since(last) < WARN_EVERY)
        {
            w.suppressed += 1;
            return None;
        }
        w.last = Some(now);
        Some(std::mem::take(&mut w.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_warning_per_cause_per_window_and_the_next_counts_the_rest() {
        let limiter = WarnLimiter::default();
        let now = Instant::now;
        assert_eq!(limiter.admit(ClientCause::Malformed, now()), Some(0));
        for _ in 0..50 {
            assert_eq!(limiter.admit(ClientCause::Malformed, now()), None);
        }
        // Another cause has a window of its own.
        assert_eq!(limiter.admit(ClientCause::TooLarge, now()), Some(0));
        tokio::time::advance(WARN_EVERY - Duration::from_millis(1)).await;
        assert_eq!(limiter.admit(ClientCause::Malformed, now()), None);
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(
            limiter.admit(ClientCause::Malformed, now()),
            Some(51),
            "the next line says how many were not logged"
        );
        assert_eq!(limiter.admit(ClientCause::Malformed, now()), None);
        tokio::time::advance(WARN_EVERY * 3).await;
        assert_eq!(limiter.admit(ClientCause::Malformed, now()), Some(1));
        assert_eq!(limiter.admit(ClientCause::TooLarge, now()), Some(0));
    }
}
