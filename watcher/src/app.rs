//! The watcher as a program, in two steps a test can also take in-process:
//! [`Watcher::start`] reads the token, builds the proxy client and binds
//! `/healthz` and `/metrics`; [`Watcher::serve`] runs the watch loop until
//! shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sluice_process::exit::{Exit, ExitStatus};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::client::ProxyClient;
use crate::events::PodEvents;
use crate::fleet::rollout::FleetSettings;
use crate::http::{self, HttpState};
use crate::metrics::Metrics;
use crate::run::{self, Heartbeat, Settings};
use crate::schedule::Slot;
use crate::tls::{ProxyCaError, ProxyTls};
use crate::token::Token;
use crate::volume::WatchOptions;

/// Everything the watcher runs with (see `cli::Args` for each one's meaning).
#[derive(Debug, Clone)]
pub struct Options {
    /// The watched configuration file.
    pub path: PathBuf,
    /// The proxy's admin API base URL.
    pub proxy: String,
    /// `--proxy-ca`: the CA trusted for an HTTPS admin API (and the peers').
    pub proxy_ca: Option<PathBuf>,
    /// A file holding the admin bearer token (read again after a 401).
    pub token_file: Option<PathBuf>,
    /// How the file is watched.
    pub watch: WatchOptions,
    /// This pod's slot.
    pub slot: Slot,
    /// Delay per slot.
    pub stagger: Duration,
    /// Random extra delay, at most this.
    pub jitter: Duration,
    /// How long one content is retried.
    pub retry_deadline: Duration,
    /// Record Kubernetes Events on the watcher's pod.
    pub events: bool,
    /// Where `/healthz` and `/metrics` are served.
    pub metrics_listen: SocketAddr,
    /// The fleet rollout, with peers.
    pub fleet: Option<FleetSettings>,
}

/// Why the watcher could not start, or stopped on its own.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The token file cannot be read.
    #[error("cannot read the token file {path}: {source}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `--proxy-ca` cannot be used.
    #[error(transparent)]
    ProxyCa(#[from] ProxyCaError),
    /// The HTTP client cannot be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// The `/healthz` and `/metrics` address cannot be bound.
    #[error("cannot bind the metrics listener {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Signal handlers could not be installed.
    #[error("signal handlers: {0}")]
    Signals(#[source] std::io::Error),
    /// The watch loop ended before shutdown (the file cannot be watched).
    #[error("the watch loop ended")]
    LoopEnded,
}

impl ExitStatus for AppError {
    /// 1 when the loop ends by itself; 2 when the watcher cannot start.
    fn exit(&self) -> Exit {
        match self {
            AppError::LoopEnded => Exit::Invalid,
            _ => Exit::Usage,
        }
    }
}

/// `sluice-watcher`: installs the signal handlers, starts, and serves until
/// SIGTERM or SIGINT.
pub async fn run(options: Options) -> Result<(), AppError> {
    let shutdown = sluice_process::signals::shutdown_token().map_err(AppError::Signals)?;
    Watcher::start(options).await?.serve(shutdown).await
}

/// A started watcher: client built, HTTP port bound, loop not yet running.
#[derive(Debug)]
pub struct Watcher {
    options: Options,
    client: ProxyClient,
    listener: TcpListener,
    http_addr: SocketAddr,
    events: Option<PodEvents>,
}

impl Watcher {
    /// Reads the token file, builds the proxy client, binds the HTTP port
    /// and, with `events`, connects to the Kubernetes API (Events are off,
    /// with a warning, when that fails).
    pub async fn start(mut options: Options) -> Result<Watcher, AppError> {
        let tls = ProxyTls::new(&options.proxy, options.proxy_ca.as_deref())?;
        if let Some(fleet) = &mut options.fleet {
            fleet.tls = tls.clone();
        }
        let token = match &options.token_file {
            None => None,
            Some(path) => match Token::from_file(path) {
                Ok(t) => Some(Arc::new(t)),
                Err(source) => {
                    let path = path.clone();
                    return Err(AppError::TokenFile { path, source });
                }
            },
        };
        let client =
            ProxyClient::with_tls(&options.proxy, token, &tls).map_err(AppError::Client)?;
        let addr = options.metrics_listen;
        let failed = |source| AppError::Bind { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(failed)?;
        let http_addr = listener.local_addr().map_err(failed)?;
        let events = if options.events {
            match PodEvents::in_cluster().await {
                Ok(e) => Some(e),
                Err(e) => {
                    tracing::warn!(error = %e, "Kubernetes Events are off");
                    None
                }
            }
        } else {
            None
        };
        Ok(Watcher {
            options,
            client,
            listener,
            http_addr,
            events,
        })
    }

    /// The bound `/healthz` and `/metrics` address.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// Runs the watch loop and the HTTP server until `shutdown` (`Ok`), or
    /// until the loop ends by itself ([`AppError::LoopEnded`]).
    pub async fn serve(self, shutdown: CancellationToken) -> Result<(), AppError> {
        let Watcher {
            options: o,
            client,
            listener,
            http_addr: _,
            events,
        } = self;
        let metrics = Arc::new(Metrics::new());
        let heartbeat = Arc::new(Heartbeat::default());
        let state = HttpState {
            metrics: Arc::clone(&metrics),
            heartbeat: Arc::clone(&heartbeat),
            stall_after: 2 * o.watch.resync.as_secs() + o.retry_deadline.as_secs() + 30,
        };
        let stop_http = CancellationToken::new();
        let server = tokio::spawn(http::serve(listener, state, stop_http.clone()));
        tracing::info!(
            path = %o.path.display(),
            proxy = %o.proxy,
            slot = o.slot.index,
            slot_source = ?o.slot.source,
            stagger_ms = o.stagger.as_millis() as u64,
            jitter_ms = o.jitter.as_millis() as u64,
            poll = o.watch.poll,
            "sluice-watcher started"
        );
        let settings = Settings {
            path: o.path,
            watch: o.watch,
            slot: o.slot,
            stagger: o.stagger,
            jitter: o.jitter,
            retry_deadline: o.retry_deadline,
            fleet: o.fleet,
        };
        let result = tokio::select! {
            () = run::run(settings, client, metrics, heartbeat, events) => Err(AppError::LoopEnded),
            () = shutdown.cancelled() => Ok(()),
        };
        stop_http.cancel();
        let _ = server.await;
        if result.is_ok() {
            tracing::info!("stopped");
        }
        result
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::schedule::SlotSource;

    fn options(dir: &tempfile::TempDir) -> Options {
        let path = dir.path().join("proxy.yaml");
        std::fs::write(&path, "admin: {}\n").expect("write");
        Options {
            path,
            // Nothing listens there: the loop retries quietly.
            proxy: "http://127.0.0.1:9".to_owned(),
            proxy_ca: None,
            token_file: None,
            watch: WatchOptions::default(),
            slot: Slot {
                index: 0,
                source: SlotSource::Flag,
            },
            stagger: Duration::ZERO,
            jitter: Duration::ZERO,
            retry_deadline: Duration::from_secs(60),
            events: false,
            metrics_listen: "127.0.0.1:0".parse().expect("addr"),
            fleet: None,
        }
    }

    #[tokio::test]
    async fn starts_serves_healthz_in_process_and_stops_on_the_token() {
        // As main does: one crypto provider, before any TLS-capable client.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().expect("dir");
        let watcher = Watcher::start(options(&dir)).await.expect("starts");
        let addr = watcher.http_addr();
        assert_ne!(addr.port(), 0);
        let shutdown = CancellationToken::new();
        let serving = tokio::spawn(watcher.serve(shutdown.clone()));

        // 503 until the loop first wakes (a moment after serving starts).
        let at = addr.to_string();
        tokio::task::spawn_blocking(move || {
            sluice_testkit::http::wait_for_status(&at, "/healthz", 200, Duration::from_secs(5))
        })
        .await
        .expect("healthz");

        shutdown.cancel();
        let stopped = tokio::time::timeout(Duration::from_secs(5), serving).await;
        assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
    }

    #[tokio::test]
    async fn an_unreadable_token_file_is_a_start_error_with_status_2() {
        let dir = tempfile::tempdir().expect("dir");
        let mut o = options(&dir);
        o.token_file = Some(dir.path().join("missing"));
        let e = Watcher::start(o).await.expect_err("no token file");
        assert!(matches!(e, AppError::TokenFile { .. }), "{e}");
        assert_eq!(e.exit(), Exit::Usage);
        assert_eq!(AppError::LoopEnded.exit(), Exit::Invalid);
    }
}
