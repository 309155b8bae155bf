//! HTTPS connections. Each accepted socket gets its own task: the TLS
//! handshake (bounded by a timeout, so a silent client cannot hold a slot),
//! then HTTP/1.1 with keep-alive and a header read timeout, served by
//! `sluice_process::http` like the proxy's and the watcher's servers. On
//! shutdown the accept loop stops and every connection finishes the request
//! it is serving, then closes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use rustls::ServerConfig;
use sluice_process::http::{self, Timeouts as HttpTimeouts};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::metrics::Metrics;

/// How long a client may stay silent at each stage of a connection.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// The TLS handshake.
    pub handshake: Duration,
    /// A request's headers, from the first byte (or from keep-alive idle).
    pub headers: Duration,
}

/// Accepts on `listener` until `shutdown`; connection tasks go to `tracker`.
pub async fn https(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    app: Router,
    timeouts: Timeouts,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    let acceptor = TlsAcceptor::from(tls);
    while let Some((tcp, peer)) = sluice_process::http::accept(&listener, &shutdown).await {
        let _ = tcp.set_nodelay(true);
        let span = tracing::debug_span!("connection", %peer);
        tracker.spawn(
            connection(
                tcp,
                peer,
                acceptor.clone(),
                app.clone(),
                timeouts,
                Arc::clone(&metrics),
                shutdown.clone(),
            )
            .instrument(span),
        );
    }
}

async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    app: Router,
    timeouts: Timeouts,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) {
    let tls = match tokio::time::timeout(timeouts.handshake, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            metrics.handshake_failed();
            tracing::debug!(%peer, error = %e, "tls handshake failed");
            return;
        }
        Err(_) => {
            metrics.handshake_failed();
            tracing::debug!(%peer, "tls handshake timed out");
            return;
        }
    };
    let served = http::serve_connection(TokioIo::new(tls), peer, app, timeouts.headers, &shutdown);
    if let Err(e) = served.await {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

/// Serves `app` over plain HTTP (the metrics port) until `shutdown`, with
/// the same read timeouts.
pub async fn plain(
    listener: TcpListener,
    app: Router,
    timeouts: HttpTimeouts,
    shutdown: CancellationToken,
) {
    http::serve(listener, app, timeouts, shutdown).await;
}
