//! The admin API's connections: the shared server of `sluice-process`
//! (HTTP/1.1 with keep-alive, header and body read timeouts, the caller's
//! address for `auth`, graceful shutdown), with the admin API's timeouts.

use std::time::Duration;

use axum::Router;
use sluice_process::http::{self, Timeouts};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Accepts on `listener` until `shutdown`, then waits for open requests.
/// A request's headers must arrive within `read_timeout`, its body within
/// three times that.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    read_timeout: Duration,
    shutdown: CancellationToken,
) {
    http::serve(listener, app, Timeouts::reading(read_timeout), shutdown).await;
}
