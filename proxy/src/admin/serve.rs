//! The admin API's connections: HTTP/1.1 with keep-alive, a header read
//! timeout and a body read timeout, so a caller that stalls (slowloris)
//! holds nothing for long. On shutdown each connection finishes the request
//! it is serving, then closes.

use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Accepts on `listener` until `shutdown`, then waits for open requests.
/// A request's headers must arrive within `read_timeout`, its body within
/// three times that.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    read_timeout: Duration,
    shutdown: CancellationToken,
) {
    let app = app.layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
        read_timeout * 3,
    ));
    let tracker = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = shutdown.cancelled() => break,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "admin accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service =
            TowerToHyperService::new(app.clone().layer(axum::Extension(ConnectInfo(peer))));
        let shutdown = shutdown.clone();
        tracker.spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout)
                .keep_alive(true);
            let conn = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(conn);
            let result = tokio::select! {
                r = conn.as_mut() => r,
                () = shutdown.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "admin connection ended with an error");
            }
        });
    }
    tracker.close();
    tracker.wait().await;
}
