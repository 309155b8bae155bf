//! The routes. `POST /validate` answers AdmissionReviews; `/healthz` and
//! `/readyz` serve probes; `/metrics` serves Prometheus. Bodies are read
//! with a size limit and a timeout before anything is parsed.
//!
//! - [`error`]: the JSON error answer of a request that is not a review

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::json;
use tokio::sync::Semaphore;

use crate::decide::{Decision, Policy};
use crate::metrics::Metrics;
use crate::review;

pub mod error;

pub use error::ApiError;

/// Largest request body: an AdmissionReview whose object and oldObject are
/// ConfigMaps at their 1 MiB limit each, plus room for the rest (JSON
/// escaping, metadata, managedFields).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Reviews read and judged at once. Each may buffer [`MAX_BODY_BYTES`] and
/// then parse it (the review's JSON, the configuration's YAML): about 20 MiB
/// at its peak for a review of two 1 MiB ConfigMaps. Four of them stay well
/// under the 128 Mi limit the manifests give the webhook: with
/// `failurePolicy: Fail` an OOM kill would block every labelled ConfigMap,
/// so a burst beyond the cap is refused instead (see [`QUEUE_WAIT`]).
pub const MAX_REVIEWS: usize = 4;

/// How long a review waits for one of the [`MAX_REVIEWS`] slots before it
/// is answered 429 (with `Retry-After`): long enough to smooth a burst of
/// quick reviews, short against the API server's 5 s timeout, so slow
/// clients holding every slot get a fast refusal, never a queue.
pub const QUEUE_WAIT: Duration = Duration::from_secs(1);

/// What every handler needs.
#[derive(Debug, Clone)]
pub struct AppState {
    /// What to check.
    pub policy: Arc<Policy>,
    /// The registry behind `/metrics`.
    pub metrics: Arc<Metrics>,
    /// False until serving starts and again once shutdown begins.
    pub ready: Arc<AtomicBool>,
    /// How long a request body may take to arrive.
    pub body_timeout: Duration,
    /// The [`MAX_REVIEWS`] slots: one is held from before the body is read
    /// until the review is judged.
    pub reviews: Arc<Semaphore>,
}

impl AppState {
    /// The slots for reviews at once: [`MAX_REVIEWS`].
    pub fn review_slots() -> Arc<Semaphore> {
        Arc::new(Semaphore::new(MAX_REVIEWS))
    }
}

/// The routes of the HTTPS port.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/validate", post(validate))
        .merge(probes())
        .fallback(not_found)
        .with_state(state)
}

/// The routes of the optional plain-HTTP metrics port.
pub fn metrics_router(state: AppState) -> Router {
    probes().fallback(not_found).with_state(state)
}

fn probes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

async fn validate(State(s): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let started = Instant::now();
    let answer = admit(&s, &headers, body).await;
    let result = match &answer {
        Ok((_, decision)) => decision.result(),
        Err(e) => e.result(),
    };
    s.metrics.admission(result, started.elapsed());
    match answer {
        Ok((review, _)) => Json(review).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn admit(
    s: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<(review::AdmissionAnswer, Decision), ApiError> {
    check_content_type(headers)?;
    let _slot = tokio::time::timeout(QUEUE_WAIT, Arc::clone(&s.reviews).acquire_owned())
        .await
        .map_err(|_| ApiError::Busy)?
        .map_err(|_| ApiError::Busy)?;
    let bytes = read_body(body, s.body_timeout).await?;
    let policy = Arc::clone(&s.policy);
    // Parsing up to 3 MiB and validating up to 1 MiB is CPU work, and file
    // checks read files: off the async workers. A panic surfaces as a 500.
    let handled = tokio::task::spawn_blocking(move || review::handle(&bytes, &policy))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let (req, decision, answer) = handled.map_err(|e| {
        tracing::info!(error = %e, "malformed admission review");
        ApiError::Review(e)
    })?;
    tracing::info!(
        uid = %req.uid,
        operation = ?req.operation,
        kind = %req.kind.kind,
        namespace = req.namespace.as_deref().unwrap_or(""),
        name = %req.name,
        dry_run = req.dry_run,
        result = decision.result(),
        "admission"
    );
    Ok((answer, decision))
}

/// Only JSON is an AdmissionReview (parameters such as charset allowed).
fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let value = headers.get(header::CONTENT_TYPE);
    let essence = value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim);
    match essence {
        Some(e) if e.eq_ignore_ascii_case("application/json") => Ok(()),
        _ => Err(ApiError::UnsupportedMediaType(value.map_or_else(
            || "none".to_owned(),
            |v| String::from_utf8_lossy(v.as_bytes()).into_owned(),
        ))),
    }
}

/// The whole body, at most [`MAX_BODY_BYTES`], within `timeout`.
async fn read_body(body: Body, timeout: Duration) -> Result<Bytes, ApiError> {
    let limited = Limited::new(body, MAX_BODY_BYTES);
    match tokio::time::timeout(timeout, limited.collect()).await {
        Err(_) => Err(ApiError::BodyTimeout(timeout)),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(ApiError::TooLarge),
        Ok(Err(e)) => Err(ApiError::BodyRead(e.to_string())),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

async fn readyz(State(s): State<AppState>) -> Response {
    let ready = s.ready.load(Ordering::Relaxed);
    let code = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(json!({ "ready": ready }))).into_response()
}

async fn metrics(State(s): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.encode(),
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

#[cfg(test)]
mod tests;
