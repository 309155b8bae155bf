//! The process, in two steps a test can also take in-process:
//! [`Webhook::start`] loads the certificate and binds the ports;
//! [`Webhook::serve`] serves HTTPS (and optionally plain-HTTP metrics),
//! rotates the certificate, and on shutdown becomes not ready, stops
//! accepting, and lets requests in flight finish within the grace period.
//! With `--self-signed`, `serve` first obtains the certificate from the
//! Secret (making it if need be) and only then accepts connections.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sluice_config::{FileRoots, FileSource, LocalFiles, PathsOnly};
use sluice_process::exit::{Exit, ExitStatus};
use sluice_process::http::Timeouts as HttpTimeouts;
use sluice_volume::watch::{WatchError, WatchOptions};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::decide::Policy;
use crate::http::{self, AppState};
use crate::metrics::Metrics;
use crate::selfsigned::{Controller, Settings};
use crate::serve::{self, Timeouts};
use crate::tls::{self, CertError, CertResolver, CertWatch, Rotator};

/// Where the serving certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Certificate {
    /// PEM files, watched and reloaded when they change.
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// Its private key.
        key: PathBuf,
    },
    /// Made, kept and renewed by the webhook itself (`--self-signed`).
    SelfSigned(Settings),
}

/// Where the files a configuration names are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileCheck {
    /// Not at all: paths are checked, contents are not (the default, since
    /// the proxy's Secrets are not mounted in the webhook's pod).
    PathsOnly,
    /// From this machine; relative paths from `root`, and only files
    /// beneath `roots`, by the proxy's own rules.
    Local {
        /// The directory relative paths are read from.
        root: PathBuf,
        /// The directories files may lie beneath (`root` by default).
        roots: FileRoots,
    },
}

/// Everything the webhook runs with.
#[derive(Debug, Clone)]
pub struct Options {
    /// The HTTPS address.
    pub listen: SocketAddr,
    /// The optional plain-HTTP metrics address.
    pub metrics_listen: Option<SocketAddr>,
    /// The serving certificate's source.
    pub certificate: Certificate,
    /// The ConfigMap key holding the configuration.
    pub config_key: String,
    /// Whether and where referenced files are read.
    pub files: FileCheck,
    /// Most errors listed in a denial; 0 lists all.
    pub max_errors: usize,
    /// Handshake, header and body read timeout.
    pub read_timeout: Duration,
    /// How long requests in flight may take after the shutdown signal.
    pub shutdown_grace: Duration,
    /// How the certificate files are watched.
    pub watch: WatchOptions,
}

/// The webhook could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The certificate or key cannot be served.
    #[error("serving certificate: {0}")]
    Certificate(#[from] CertError),
    /// rustls refused the server configuration.
    #[error("tls configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// An address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The certificate files cannot be watched.
    #[error("cannot watch the certificate files: {0}")]
    Watch(#[from] WatchError),
    /// No Kubernetes client for --self-signed (no service account, no
    /// kubeconfig).
    #[error("kubernetes client for --self-signed: {0}")]
    Kube(#[source] kube::Error),
    /// Signal handlers could not be installed.
    #[error("signal handlers: {0}")]
    Signals(#[source] std::io::Error),
}

impl ExitStatus for RunError {
    /// Every way the webhook fails is at start-up: 2.
    fn exit(&self) -> Exit {
        Exit::Usage
    }
}

/// `sluice-webhook`: installs the signal handlers, starts, and serves until
/// SIGTERM or SIGINT, then drains.
pub async fn run(options: Options) -> Result<(), RunError> {
    let shutdown = sluice_process::signals::shutdown_token().map_err(RunError::Signals)?;
    Webhook::start(options).await?.serve(shutdown).await
}

/// The certificate, as loaded by [`Webhook::start`].
#[derive(Debug)]
enum Source {
    Files(Rotator),
    SelfSigned(Box<Controller>),
}

/// A webhook with its certificate loaded and its ports bound, not yet
/// serving: tests and benchmarks learn the addresses of `:0` ports here.
#[derive(Debug)]
pub struct Webhook {
    options: Options,
    state: AppState,
    source: Source,
    https: TcpListener,
    https_addr: SocketAddr,
    plain: Option<(TcpListener, SocketAddr)>,
}

impl Webhook {
    /// Loads the certificate and binds the ports. With `--self-signed`,
    /// the API server is reached with the in-cluster configuration or the
    /// kubeconfig.
    pub async fn start(options: Options) -> Result<Self, RunError> {
        Self::start_with(options, None).await
    }

    /// [`Webhook::start`] with this Kubernetes client for `--self-signed`
    /// (tests point it at their own API server).
    pub async fn start_with(
        options: Options,
        client: Option<kube::Client>,
    ) -> Result<Self, RunError> {
        let metrics = Arc::new(Metrics::new());
        let source = match &options.certificate {
            Certificate::Files { cert, key } => Source::Files(Rotator::load(
                cert.clone(),
                key.clone(),
                Arc::clone(&metrics),
            )?),
            Certificate::SelfSigned(settings) => {
                let client = match client {
                    Some(client) => client,
                    None => kube::Client::try_default().await.map_err(RunError::Kube)?,
                };
                Source::SelfSigned(Box::new(Controller::new(
                    settings.clone(),
                    client,
                    Arc::clone(&metrics),
                )))
            }
        };
        let files: Arc<dyn FileSource> = match &options.files {
            FileCheck::PathsOnly => Arc::new(PathsOnly),
            FileCheck::Local { root, roots } => {
                Arc::new(LocalFiles::relative_to(root).within(roots.clone()))
            }
        };
        let state = AppState {
            policy: Arc::new(Policy::new(
                options.config_key.clone(),
                options.max_errors,
                files,
            )),
            metrics,
            ready: Arc::new(AtomicBool::new(false)),
            body_timeout: options.read_timeout,
            reviews: AppState::review_slots(),
        };
        let (https, https_addr) = bind(options.listen).await?;
        let plain = match options.metrics_listen {
            Some(addr) => Some(bind(addr).await?),
            None => None,
        };
        Ok(Webhook {
            options,
            state,
            source,
            https,
            https_addr,
            plain,
        })
    }

    /// The bound HTTPS address.
    pub fn local_addr(&self) -> SocketAddr {
        self.https_addr
    }

    /// The bound plain-HTTP metrics address, if any.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.plain.as_ref().map(|(_, addr)| *addr)
    }

    /// Serves until `shutdown`; then becomes not ready, stops accepting, and
    /// waits up to the grace period for requests in flight.
    pub async fn serve(self, shutdown: CancellationToken) -> Result<(), RunError> {
        let Webhook {
            options,
            state,
            source,
            https,
            https_addr,
            plain,
        } = self;
        let cancel = CancellationToken::new();
        let tracker = TaskTracker::new();
        let Some(resolver) = source
            .start(&options.watch, &shutdown, &cancel, &tracker)
            .await?
        else {
            tracing::info!("stopped before a certificate was available");
            return Ok(());
        };
        let tls = tls::server_config(resolver)?;
        let timeouts = Timeouts {
            handshake: options.read_timeout,
            headers: options.read_timeout,
        };
        let server = tokio::spawn(serve::https(
            https,
            tls,
            http::router(state.clone()),
            timeouts,
            Arc::clone(&state.metrics),
            cancel.clone(),
            tracker.clone(),
        ));
        let metrics_addr = plain.as_ref().map(|(_, a)| a.to_string());
        if let Some((listener, _)) = plain {
            tracker.spawn(serve::plain(
                listener,
                http::metrics_router(state.clone()),
                HttpTimeouts {
                    headers: options.read_timeout,
                    body: options.read_timeout,
                },
                cancel.clone(),
            ));
        }
        state.ready.store(true, Ordering::Relaxed);
        let files = match &options.files {
            FileCheck::PathsOnly => "paths-only".to_owned(),
            FileCheck::Local { roots, .. } => format!("{:?}", roots.dirs()),
        };
        tracing::info!(
            addr = %https_addr,
            metrics_addr = metrics_addr.unwrap_or_default(),
            config_key = %options.config_key,
            files = %files,
            "webhook ready"
        );

        shutdown.cancelled().await;
        drain(&state, cancel, server, tracker, options.shutdown_grace).await;
        tracing::info!("stopped");
        Ok(())
    }
}

impl Source {
    /// Starts keeping the certificate (watching its files, or renewing the
    /// self-signed one once it is had) on `tracker`, until `cancel`; what
    /// rustls asks for it, or `None` when `shutdown` came before a
    /// self-signed certificate was available.
    async fn start(
        self,
        watch: &WatchOptions,
        shutdown: &CancellationToken,
        cancel: &CancellationToken,
        tracker: &TaskTracker,
    ) -> Result<Option<Arc<CertResolver>>, RunError> {
        Ok(Some(match self {
            Source::Files(rotator) => {
                let resolver = rotator.resolver();
                let watch = CertWatch::start(rotator, watch)?;
                tracker.spawn(watch.run(cancel.clone()));
                resolver
            }
            Source::SelfSigned(mut controller) => {
                let Some(resolver) = controller.acquire(shutdown).await else {
                    return Ok(None);
                };
                tracker.spawn(controller.run(cancel.clone()));
                resolver
            }
        }))
    }
}

/// Shutting down: not ready, the servers stop accepting, and requests in
/// flight get up to `grace` to finish.
async fn drain(
    state: &AppState,
    cancel: CancellationToken,
    server: tokio::task::JoinHandle<()>,
    tracker: TaskTracker,
    grace: Duration,
) {
    tracing::info!("shutting down: not ready, finishing requests in flight");
    state.ready.store(false, Ordering::Relaxed);
    cancel.cancel();
    let _ = server.await;
    tracker.close();
    let drained = tokio::time::timeout(grace, tracker.wait()).await;
    if drained.is_err() {
        tracing::warn!(
            grace = ?grace,
            "requests still in flight at the end of the grace period"
        );
    }
}

async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), RunError> {
    let failed = |source| RunError::Bind { addr, source };
    let listener = TcpListener::bind(addr).await.map_err(failed)?;
    let local = listener.local_addr().map_err(failed)?;
    Ok((listener, local))
}

#[cfg(test)]
mod tests;
