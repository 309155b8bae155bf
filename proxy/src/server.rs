//! `sluice-proxy run`, in two steps a test can also take in-process:
//! [`Proxy::start`] loads and validates the configuration, binds the admin
//! port and starts every cluster (held, with `--hold`); [`Proxy::serve`]
//! serves the admin API (and reloads the file on SIGHUP, when asked, and
//! releases a hold at its timeout) until shutdown, then becomes not-ready,
//! drains every cluster up to `drainTimeout`, and returns.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sluice_process::exit::{Exit, ExitStatus};
use sluice_process::signals::{self, Hangups};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::admin::{self, AppState};
use crate::config::read_config;
use crate::config::{self, ConfigProblem, LocalFiles};
use crate::engine::{Engine, Release, ReloadOutcome, StartError};
use crate::metrics::Metrics;
use crate::observe::Observed;

/// What `run` needs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The configuration file.
    pub config: PathBuf,
    /// Write each configuration applied through the API back to `config`.
    pub persist: bool,
    /// How long an admin API caller may take to send a request's headers
    /// (its body may take three times as long).
    pub admin_read_timeout: std::time::Duration,
    /// This proxy's instance name in status (`--instance`): the pod name.
    pub instance: String,
    /// The directories referenced files may lie beneath (`--file-root`);
    /// empty: the configuration's own directory.
    pub file_roots: Vec<PathBuf>,
    /// `--hold`: start with the data plane held, for at most this long
    /// (see [`Engine::start_held`]); `None`: serve at once.
    pub hold: Option<Duration>,
}

/// Why the proxy could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The configuration is invalid; every error is listed.
    #[error("{} is invalid ({} errors)", .path, .errors.len())]
    Invalid {
        /// The file.
        path: String,
        /// Every error.
        errors: Vec<ConfigProblem>,
    },
    /// Clusters failed to start under fail-fast.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The admin listener could not be bound.
    #[error("admin listener {addr}: {source}")]
    Admin {
        /// Its address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `admin.tls` cannot be served.
    #[error(transparent)]
    AdminTls(#[from] admin::AdminTlsError),
    /// Signal handlers could not be installed.
    #[error("signal handlers: {0}")]
    Signals(#[source] std::io::Error),
}

impl ExitStatus for RunError {
    /// 2 when the file cannot be read; 1 for everything else, as `run`'s
    /// help promises (an invalid configuration, clusters or the admin port
    /// that cannot start).
    fn exit(&self) -> Exit {
        match self {
            RunError::Read { .. } => Exit::Usage,
            _ => Exit::Invalid,
        }
    }
}

/// `sluice-proxy run`: installs the signal handlers, starts, and serves
/// until SIGTERM or SIGINT, reloading the file on SIGHUP.
pub async fn run(options: RunOptions) -> Result<(), RunError> {
    let shutdown = signals::shutdown_token().map_err(RunError::Signals)?;
    let hangups = Hangups::install().map_err(RunError::Signals)?;
    Proxy::start(options)
        .await?
        .reload_on(hangups)
        .serve(shutdown)
        .await;
    Ok(())
}

/// A started proxy: configuration valid, admin port bound, every cluster
/// serving; the admin API is served by [`Proxy::serve`].
#[derive(Debug)]
pub struct Proxy {
    options: RunOptions,
    engine: Arc<Engine>,
    admin: TcpListener,
    admin_addr: SocketAddr,
    admin_tls: Option<Arc<rustls::ServerConfig>>,
    hangups: Option<Hangups>,
}

impl Proxy {
    /// Reads and validates the configuration, binds the admin port (first:
    /// if it is taken, nothing else is started) and starts every cluster.
    pub async fn start(options: RunOptions) -> Result<Proxy, RunError> {
        let path = options.config.display().to_string();
        let bytes = read_config(&options.config).map_err(|source| RunError::Read {
            path: path.clone(),
            source,
        })?;
        let files =
            LocalFiles::for_config(&options.config, &options.file_roots).map_err(|source| {
                RunError::Read {
                    path: path.clone(),
                    source,
                }
            })?;
        tracing::info!(roots = ?files.roots().dirs(), "referenced files are read beneath these roots only");
        let files = Arc::new(files);
        let valid = config::validate(&bytes, &*files).map_err(|errors| RunError::Invalid {
            path: path.clone(),
            errors,
        })?;
        tracing::info!(config = %path, version = %valid.version, clusters = valid.config.virtual_clusters.len(), "configuration loaded");
        let addr = valid.config.admin.listen;
        let failed = |source| RunError::Admin { addr, source };
        let admin = TcpListener::bind(addr).await.map_err(failed)?;
        let admin_addr = admin.local_addr().map_err(failed)?;

        let metrics = Arc::new(Metrics::new());
        let observe = Arc::new(Observed::new(Arc::clone(metrics.signals())));
        let engine = match options.hold {
            Some(timeout) => {
                tracing::info!(
                    ?timeout,
                    "held: no virtual cluster serves until a reload applies, POST /admin/config/release, or the --hold timeout"
                );
                Engine::start_held(valid, metrics, files, observe)?
            }
            None => Engine::start_with(valid, metrics, files, observe)?,
        };
        let admin_tls = admin::tls_config(&engine)?;
        // The engine is new: no name is set yet.
        let _ = engine.set_instance(options.instance.clone());
        if options.persist {
            let path = options.config.clone();
            // The engine is new: no hook is set yet.
            let _ = engine.set_persist(Box::new(move |bytes| persist(&path, bytes)));
        }
        Ok(Proxy {
            options,
            engine,
            admin,
            admin_addr,
            admin_tls,
            hangups: None,
        })
    }

    /// The bound admin API address.
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// Re-reads the configuration file on each SIGHUP while serving, and
    /// reloads it through the same path as `POST /admin/config/reload`.
    pub fn reload_on(mut self, hangups: Hangups) -> Proxy {
        self.hangups = Some(hangups);
        self
    }

    /// Serves the admin API until `shutdown`; then becomes not ready,
    /// drains every cluster up to `drainTimeout`, and stops the admin API.
    pub async fn serve(self, shutdown: CancellationToken) {
        let Proxy {
            options,
            engine,
            admin,
            admin_addr,
            admin_tls,
            mut hangups,
        } = self;
        let stop_admin = CancellationToken::new();
        let state = AppState {
            engine: Arc::clone(&engine),
        };
        let scheme = if admin_tls.is_some() { "https" } else { "http" };
        let admin_task = tokio::spawn(admin::serve_with(
            admin,
            state,
            admin_tls,
            options.admin_read_timeout,
            stop_admin.clone(),
        ));
        tracing::info!(admin = %admin_addr, scheme, held = engine.is_held(), connection_threads = crate::dataplane::cores::threads(), "sluice-proxy ready");

        // Certificates close to expiry are warned about again every hour.
        let mut recheck = tokio::time::interval(std::time::Duration::from_secs(3600));
        let mut hold = std::pin::pin!(hold_timeout(options.hold));
        let mut hold_over = options.hold.is_none();
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = recheck.tick() => engine.recheck_certificates(),
                timeout = &mut hold, if !hold_over => {
                    hold_over = true;
                    engine.release(Release::Timeout(timeout));
                }
                Some(()) = hangup(&mut hangups) => tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = reload_from_file(&engine, &options.config) => {}
                },
            }
        }
        tracing::info!(drain_timeout = ?engine.config().config.drain_timeout, "stopping: not ready, draining every cluster");
        engine.shutdown().await;
        stop_admin.cancel();
        if let Err(e) = admin_task.await {
            tracing::error!(error = %e, "admin server task failed");
        }
        tracing::info!("stopped");
    }
}

/// Ends `timeout` after it is called (never without one): then a data
/// plane still held serves the file's version. Counted from `serve`, which
/// follows `start` at once.
async fn hold_timeout(timeout: Option<Duration>) -> Duration {
    match timeout {
        Some(t) => {
            tokio::time::sleep(t).await;
            t
        }
        None => std::future::pending().await,
    }
}

/// The next SIGHUP, or never when the proxy does not reload on SIGHUP.
async fn hangup(hangups: &mut Option<Hangups>) -> Option<()> {
    match hangups {
        Some(h) => h.next().await,
        None => std::future::pending().await,
    }
}

/// SIGHUP: re-read the configuration file and reload it through the same
/// path as `POST /admin/config/reload`. When another reload is running, waits
/// for it to end and then reads and applies the file: a SIGHUP is never
/// dropped.
async fn reload_from_file(engine: &Arc<Engine>, path: &Path) {
    tracing::info!(config = %path.display(), "SIGHUP: reloading the configuration file");
    loop {
        let reloading = Arc::clone(engine);
        let file = path.to_path_buf();
        let outcome =
            tokio::task::spawn_blocking(move || reloading.reload_reading(|| read_config(&file)))
                .await
                .map(|read| read.map(|done| (done.outcome.clone(), done)));
        if let Ok(Ok((_, done))) = &outcome {
            admin::events::audit_signal_reload(done);
            engine.release_after(&done.outcome);
        }
        match outcome {
            Ok(Err(e)) => {
                tracing::error!(config = %path.display(), error = %e, "SIGHUP: cannot read the configuration file; nothing changed");
                return;
            }
            Ok(Ok((ReloadOutcome::Busy { .. }, _))) => {
                tracing::info!(config = %path.display(), "SIGHUP: another reload is running; the file is read and applied once it ends");
                engine.reload_slot_free().await;
            }
            Ok(Ok((ReloadOutcome::Rejected { errors, .. }, _))) => {
                let file = path.display().to_string();
                for e in errors {
                    tracing::warn!(error = %e.in_file(&file), "SIGHUP: configuration error");
                }
                return;
            }
            _ => return,
        }
    }
}

mod persist;

use persist::persist;

#[cfg(test)]
mod tests;
