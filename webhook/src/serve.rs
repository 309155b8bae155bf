//! HTTPS connections. Each accepted socket gets its own task: the TLS
//! handshake (bounded by a timeout, so a silent client cannot hold a slot),
//! then HTTP/1.1 with keep-alive and a header read timeout. On shutdown the
//! accept loop stops and every connection finishes the request it is
//! serving, then closes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
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
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = shutdown.cancelled() => return,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors, say: wait a moment instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
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
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.headers)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(tls), TowerToHyperService::new(app));
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = shutdown.cancelled() => {
            // Finish the request in flight, then close.
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

/// Serves `app` over plain HTTP (the metrics port) until `shutdown`.
pub async fn plain(listener: TcpListener, app: Router, shutdown: CancellationToken) {
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await;
    if let Err(e) = served {
        tracing::warn!(error = %e, "metrics listener failed");
    }
}
