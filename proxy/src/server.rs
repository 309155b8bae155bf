//! `sluice-proxy run`: load the configuration, start every cluster, serve the
//! admin API, and stop gracefully on SIGTERM or SIGINT.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::admin::{self, AppState};
use crate::cli::read_config;
use crate::config::{self, ConfigError, LocalFiles};
use crate::engine::{Engine, StartError};
use crate::metrics::Metrics;

/// What `run` needs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The configuration file.
    pub config: PathBuf,
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
        errors: Vec<ConfigError>,
    },
    /// Clusters failed to start under fail-fast.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The admin listener could not be bound.
    #[error("admin listener {addr}: {source}")]
    Admin {
        /// Its address.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Runs the proxy until a termination signal, then drains and returns.
pub async fn run(options: RunOptions) -> Result<(), RunError> {
    let path = options.config.display().to_string();
    let bytes = read_config(&options.config).map_err(|source| RunError::Read {
        path: path.clone(),
        source,
    })?;
    let valid =
        config::validate(&bytes, &LocalFiles::beside(&options.config)).map_err(|errors| {
            RunError::Invalid {
                path: path.clone(),
                errors,
            }
        })?;
    tracing::info!(config = %path, version = %valid.version, clusters = valid.config.virtual_clusters.len(), "configuration loaded");
    let admin_addr = valid.config.admin.listen;
    let drain_timeout = valid.config.drain_timeout;
    // Bind the admin port first: if it is taken, nothing else is started.
    let admin_listener = TcpListener::bind(admin_addr)
        .await
        .map_err(|source| RunError::Admin {
            addr: admin_addr,
            source,
        })?;
    let metrics = Arc::new(Metrics::new());
    let engine = Engine::start(valid, metrics)?;
    let shutdown = CancellationToken::new();
    let app = admin::router(AppState {
        engine: Arc::clone(&engine),
    });
    let admin_shutdown = shutdown.clone();
    let admin_task = tokio::spawn(async move {
        let served = axum::serve(admin_listener, app)
            .with_graceful_shutdown(admin_shutdown.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "admin server failed");
        }
    });
    tracing::info!(admin = %admin_addr, "sluice-proxy ready");
    wait_for_signal().await;
    tracing::info!(drain_timeout = ?drain_timeout, "stopping: draining connections");
    engine.shutdown(drain_timeout).await;
    shutdown.cancel();
    let _ = admin_task.await;
    tracing::info!("stopped");
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // Without signal handlers the process can only be killed; keep serving.
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
}
