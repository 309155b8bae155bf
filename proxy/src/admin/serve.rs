//! The admin API's connections: the shared HTTP/1.1 server of
//! `sluice-process` (keep-alive, a header read timeout, the caller's address
//! for `auth`, graceful shutdown) behind an accept loop of its own, which
//! caps open connections at [`MAX_CONNECTIONS`] (the excess is closed at
//! once, so the admin port can never take the process's file descriptors)
//! and tells each request the address it arrived on (the `Host` check).
//! With `admin.tls`, each connection completes a TLS handshake (within the
//! header timeout) before HTTP; a caller speaking plain HTTP is closed.

use std::sync::Arc;
use std::time::Duration;

use axum::{Extension, Router};
use hyper_util::rt::TokioIo;
use sluice_process::http::{self, Timeouts};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use super::events::AdminEvents;
use super::guard::LocalAddr;

/// The most admin connections open at once: the watcher, probes, Prometheus
/// and an operator need a handful.
pub const MAX_CONNECTIONS: usize = 64;

/// Accepts on `listener` until `shutdown`, then waits for open requests.
/// A request's headers must arrive within `read_timeout`, its whole body
/// within three times that (a total deadline, from the end of the headers).
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<TlsAcceptor>,
    events: AdminEvents,
    read_timeout: Duration,
    shutdown: CancellationToken,
) {
    let timeouts = Timeouts::reading(read_timeout);
    let app = http::body_deadline(app, timeouts.body);
    let open = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let tracker = TaskTracker::new();
    while let Some((tcp, peer)) = http::accept(&listener, &shutdown).await {
        let Ok(slot) = Arc::clone(&open).try_acquire_owned() else {
            drop(tcp);
            events.connection_refused(peer, MAX_CONNECTIONS);
            continue;
        };
        let mut app = app.clone();
        if let Ok(local) = tcp.local_addr() {
            app = app.layer(Extension(LocalAddr(local)));
        }
        let shutdown = shutdown.clone();
        let tls = tls.clone();
        let span = tracing::debug_span!("connection", %peer);
        tracker.spawn(
            async move {
                let _slot = slot;
                connection(tcp, peer, tls, app, timeouts.headers, shutdown).await;
            }
            .instrument(span),
        );
    }
    tracker.close();
    tracker.wait().await;
}

/// One connection: the TLS handshake first when `tls` is set, then HTTP.
async fn connection(
    tcp: TcpStream,
    peer: std::net::SocketAddr,
    tls: Option<TlsAcceptor>,
    app: Router,
    headers: Duration,
    shutdown: CancellationToken,
) {
    let served = match tls {
        None => http::serve_connection(TokioIo::new(tcp), peer, app, headers, &shutdown).await,
        Some(acceptor) => match tokio::time::timeout(headers, acceptor.accept(tcp)).await {
            Ok(Ok(stream)) => {
                http::serve_connection(TokioIo::new(stream), peer, app, headers, &shutdown).await
            }
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "tls handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!("tls handshake timed out");
                return;
            }
        },
    };
    if let Err(e) = served {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}
