//! Serving an axum [`Router`] over HTTP/1.1 with keep-alive, a header read
//! timeout and a total body deadline, so a caller that stalls or dribbles
//! (slowloris) holds nothing for long; on shutdown each connection finishes the request
//! it is serving, then closes, and [`serve`] returns once all have.
//!
//! Every handler sees the caller's address as a `ConnectInfo<SocketAddr>`
//! request extension. A server with its own accept loop (the webhook's TLS
//! handshake first) calls [`serve_connection`] for the HTTP part.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

mod deadline;

pub use deadline::{BodyDeadlineExceeded, DeadlineBody, with_deadline};

/// How long a caller may stay silent while sending a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// A request's headers, from the start of the request (or of the
    /// keep-alive wait for the next one).
    pub headers: Duration,
    /// A request's whole body, from the moment its headers are in: a total
    /// deadline, not a silence between chunks.
    pub body: Duration,
}

impl Timeouts {
    /// Headers within `read`, the body within three times that: a body
    /// (a configuration of up to 1 MiB) legitimately takes longer.
    pub fn reading(read: Duration) -> Timeouts {
        Timeouts {
            headers: read,
            body: read.saturating_mul(3),
        }
    }
}

/// The next connection, or `None` once `shutdown` is cancelled. A failed
/// accept (out of file descriptors, say) waits a moment instead of spinning.
pub async fn accept(
    listener: &tokio::net::TcpListener,
    shutdown: &CancellationToken,
) -> Option<(tokio::net::TcpStream, std::net::SocketAddr)> {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = shutdown.cancelled() => return None,
        };
        match accepted {
            Ok(a) => return Some(a),
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Accepts on `listener` until `shutdown`, then waits for the connections'
/// requests in flight to finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    timeouts: Timeouts,
    shutdown: CancellationToken,
) {
    let app = body_deadline(app, timeouts.body);
    let tracker = TaskTracker::new();
    while let Some((tcp, peer)) = accept(&listener, &shutdown).await {
        let app = app.clone();
        let shutdown = shutdown.clone();
        let span = tracing::debug_span!("connection", %peer);
        tracker.spawn(
            async move {
                let served =
                    serve_connection(TokioIo::new(tcp), peer, app, timeouts.headers, &shutdown);
                if let Err(e) = served.await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            }
            .instrument(span),
        );
    }
    tracker.close();
    tracker.wait().await;
}

/// `app` with every request body under a total deadline of `total`
/// ([`DeadlineBody`]); [`serve`] adds it, a server with its own accept loop
/// adds it itself.
pub fn body_deadline(app: Router, total: Duration) -> Router {
    app.layer(axum::middleware::map_request(
        move |request: axum::extract::Request| async move { with_deadline(request, total) },
    ))
}

/// Serves HTTP/1.1 on one accepted connection (`io` already wrapped for
/// hyper, e.g. a TLS stream in [`TokioIo`]) until the caller closes it, a
/// header read times out, or `shutdown`, after which the request in flight
/// finishes first. `app` gets `ConnectInfo(peer)`; a body timeout, if
/// wanted, is `app`'s own layer.
pub async fn serve_connection<I>(
    io: I,
    peer: SocketAddr,
    app: Router,
    header_timeout: Duration,
    shutdown: &CancellationToken,
) -> Result<(), hyper::Error>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(app.layer(axum::Extension(ConnectInfo(peer))));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => r,
        () = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    }
}

#[cfg(test)]
mod tests;
