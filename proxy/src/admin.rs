//! The admin HTTP API, served on `admin.listen`: configuration validate,
//! reload, status and content; clusters; health, readiness and metrics.
//!
//! - `config`: the configuration endpoints
//! - `auth`: who may call the mutating ones
//! - [`error`]: the JSON error type
//! - `serve`: connections with header and body read timeouts

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde_json::json;

use crate::config::MAX_CONFIG_BYTES;
use crate::engine::Engine;

mod auth;
mod config;
pub mod error;
mod serve;

/// Largest request body: a configuration at its size limit, with room for
/// the validator to report the excess itself.
pub const MAX_BODY_BYTES: usize = MAX_CONFIG_BYTES + 1;

/// What every handler needs.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The running proxy.
    pub engine: Arc<Engine>,
    /// Where applied configurations are written back (`--persist`).
    pub persist: Option<PathBuf>,
}

/// The admin API's routes. Mutating endpoints look at the caller's address,
/// a `ConnectInfo<SocketAddr>` request extension ([`serve`] adds it).
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/admin/config/validate", post(config::validate))
        .route("/admin/config/reload", post(config::reload))
        .route("/admin/config/status", get(config::status))
        .route("/admin/config", get(config::current))
        .route("/admin/clusters", get(clusters))
        .route("/admin/health", get(health))
        .route("/admin/ready", get(ready))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Serves the router on a bound listener until `shutdown` completes; a
/// request's headers must arrive within `read_timeout` (its body within
/// three times that).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    read_timeout: std::time::Duration,
    shutdown: tokio_util::sync::CancellationToken,
) {
    serve::serve(listener, router(state), read_timeout, shutdown).await;
}

async fn health() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

async fn ready(State(s): State<AppState>) -> Response {
    let ready = s.engine.is_ready();
    let code = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(json!({ "ready": ready }))).into_response()
}

async fn clusters(State(s): State<AppState>) -> Json<serde_json::Value> {
    Json(json!({ "clusters": s.engine.clusters() }))
}

async fn metrics(State(s): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.engine.metrics().encode(),
    )
        .into_response()
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({ "error": "no such endpoint" })),
    )
        .into_response()
}
