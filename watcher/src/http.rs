//! The watcher's own small HTTP server: `/healthz` (fails when the watch
//! loop stalls) and `/metrics`, with the same header and body read timeouts
//! as the proxy's admin API and the webhook (`sluice_process::http`).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sluice_process::http::Timeouts;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::run::Heartbeat;

/// What the handlers read.
#[derive(Debug, Clone)]
pub struct HttpState {
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// The loop's liveness stamp.
    pub heartbeat: Arc<Heartbeat>,
    /// How old the stamp may be before the loop counts as stalled, in seconds.
    pub stall_after: u64,
}

/// How long a scraper or a probe may take to send a request's headers
/// (its body, three times that): the other two servers' default.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves the routes on `listener` until `shutdown`.
pub async fn serve(listener: TcpListener, state: HttpState, shutdown: CancellationToken) {
    let timeouts = Timeouts::reading(READ_TIMEOUT);
    sluice_process::http::serve(listener, router(state), timeouts, shutdown).await;
}

/// The routes.
pub fn router(state: HttpState) -> Router {
    Router::new()
        .route("/healthz", get(health))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn health(State(s): State<HttpState>) -> Response {
    let age = s.heartbeat.age();
    if age > s.stall_after {
        let body = format!("watch loop stalled: last active {age}s ago\n");
        return (StatusCode::SERVICE_UNAVAILABLE, body).into_response();
    }
    (StatusCode::OK, "ok\n").into_response()
}

async fn metrics(State(s): State<HttpState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.encode(),
    )
        .into_response()
}
