//! The admin HTTP API: health, readiness, clusters and metrics. Served on
//! `admin.listen`.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use serde_json::json;

use crate::engine::Engine;

/// What every handler needs.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The running proxy.
    pub engine: Arc<Engine>,
}

/// The admin API's routes.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/admin/health", get(health))
        .route("/admin/ready", get(ready))
        .route("/admin/clusters", get(clusters))
        .route("/metrics", get(metrics))
        .with_state(state)
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
