//! The watcher's own small HTTP server: `/healthz` (fails when the watch
//! loop stalls) and `/metrics`.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

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
