//! Signals, handled once for every binary: SIGTERM (Kubernetes stopping
//! the pod) and SIGINT (Ctrl-C) cancel one root [`CancellationToken`] that
//! the program's `serve` watches; SIGHUP, which only the proxy uses (re-read
//! the configuration file), is a stream of [`Hangups`].

use std::io;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Installs the SIGTERM and SIGINT handlers and returns the token the first
/// of them cancels. Call it inside the runtime, before starting anything,
/// so a signal during start-up stops the program instead of killing it.
pub fn shutdown_token() -> io::Result<CancellationToken> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::debug!(signal = name, "shutdown requested");
        cancel.cancel();
    });
    Ok(token)
}

/// SIGHUP, received one at a time.
#[derive(Debug)]
pub struct Hangups(Signal);

impl Hangups {
    /// Installs the SIGHUP handler (which also stops SIGHUP from killing
    /// the process).
    pub fn install() -> io::Result<Hangups> {
        signal(SignalKind::hangup()).map(Hangups)
    }

    /// Waits for the next SIGHUP; `None` once no more can arrive.
    pub async fn next(&mut self) -> Option<()> {
        self.0.recv().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn send(signal: &str) {
        let status = std::process::Command::new("kill")
            .args([signal, &std::process::id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    // One test, so both handlers are installed before either signal is sent
    // (without a handler, SIGTERM would end the test process).
    #[tokio::test]
    async fn sighup_is_a_stream_and_sigterm_cancels_the_token() {
        let token = shutdown_token().expect("handlers");
        let mut hangups = Hangups::install().expect("handler");
        tokio::task::yield_now().await;
        assert!(!token.is_cancelled());

        send("-HUP");
        let hup = tokio::time::timeout(Duration::from_secs(5), hangups.next()).await;
        assert_eq!(hup, Ok(Some(())));
        assert!(!token.is_cancelled(), "SIGHUP is not a shutdown");

        send("-TERM");
        let cancelled = tokio::time::timeout(Duration::from_secs(5), token.cancelled()).await;
        assert!(cancelled.is_ok(), "SIGTERM cancels the token");
    }
}
