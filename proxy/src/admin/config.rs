//! `/admin/config/*`: validate, reload, status, and the configuration in force.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use serde_json::json;

use super::auth::authorize;
use super::error::ApiError;
use super::{AppState, MAX_BODY_BYTES};
use crate::config::{ConfigVersion, diff, validate as validate_config};
use crate::engine::ReloadOutcome;

fn body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|e| match e {
        BytesRejection::FailedToBufferBody(inner) if inner.to_string().contains("length limit") => {
            ApiError::TooLarge(MAX_BODY_BYTES - 1)
        }
        BytesRejection::FailedToBufferBody(inner) if inner.to_string().contains("timeout") => {
            ApiError::SlowBody
        }
        other => ApiError::BadBody(other.body_text()),
    })
}

fn check_caller(s: &AppState, peer: SocketAddr, headers: &HeaderMap) -> Result<(), ApiError> {
    let config = s.engine.config();
    let token = config
        .config
        .admin
        .token
        .as_ref()
        .map(|t| t.0.as_str().to_owned());
    authorize(peer, headers, token.as_deref())
}

/// `POST /admin/config/validate`: every error, or what a reload would change.
pub(super) async fn validate(
    State(s): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_caller(&s, peer, &headers)?;
    let bytes = body(raw)?;
    let engine = Arc::clone(&s.engine);
    let result = tokio::task::spawn_blocking(move || {
        let current = engine.config();
        let outcome = validate_config(&bytes, engine.files())
            .map(|new| (diff(&current.config, &new.config), new.version));
        let errors = outcome.as_ref().map_or_else(Vec::len, |_| 0);
        engine.record_validation(ConfigVersion::of(&bytes).to_string(), errors);
        (outcome, ConfigVersion::of(&bytes))
    })
    .await
    .map_err(|_| ApiError::Internal)?;
    Ok(match result {
        (Ok((changes, version)), _) => Json(json!({
            "valid": true,
            "configVersion": version,
            "changes": changes,
        }))
        .into_response(),
        (Err(errors), version) => (
            StatusCode::BAD_REQUEST,
            Json(json!({ "valid": false, "configVersion": version, "errors": errors })),
        )
            .into_response(),
    })
}

/// `POST /admin/config/reload`: prepare, then commit; nothing changes on failure.
pub(super) async fn reload(
    State(s): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_caller(&s, peer, &headers)?;
    let bytes = body(raw)?;
    let if_match = headers
        .get(header::IF_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().trim_matches('"').to_owned());
    let engine = Arc::clone(&s.engine);
    let persist_bytes = bytes.clone();
    let outcome = tokio::task::spawn_blocking(move || engine.reload(&bytes, if_match.as_deref()))
        .await
        .map_err(|_| ApiError::Internal)?;
    if let (ReloadOutcome::Applied { .. }, Some(path)) = (&outcome, &s.persist) {
        crate::server::persist(path, &persist_bytes);
    }
    Ok(respond(outcome))
}

fn respond(outcome: ReloadOutcome) -> Response {
    match outcome {
        ReloadOutcome::Applied {
            version,
            changes,
            duration,
            restart_required,
        } => Json(json!({
            "success": true,
            "changed": !changes.is_empty(),
            "configVersion": version,
            "clustersAdded": changes.added,
            "clustersRemoved": changes.removed,
            "clustersModified": changes.modified,
            "clustersUnchanged": changes.unchanged,
            "durationMs": duration.as_secs_f64() * 1e3,
            "restartRequired": restart_required,
        }))
        .into_response(),
        ReloadOutcome::Unchanged { version } => Json(json!({
            "success": true,
            "changed": false,
            "configVersion": version,
            "clustersAdded": [],
            "clustersRemoved": [],
            "clustersModified": [],
            "durationMs": 0,
        }))
        .into_response(),
        ReloadOutcome::Rejected { version, errors } => (
            StatusCode::BAD_REQUEST,
            Json(json!({ "success": false, "valid": false, "configVersion": version, "errors": errors })),
        )
            .into_response(),
        ReloadOutcome::PreconditionFailed { current } => (
            StatusCode::PRECONDITION_FAILED,
            Json(json!({
                "success": false,
                "error": "If-Match does not name the configuration version in force",
                "configVersion": current,
            })),
        )
            .into_response(),
        ReloadOutcome::Failed { reason, current } => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "success": false, "error": reason, "configVersion": current })),
        )
            .into_response(),
        ReloadOutcome::Busy { since } => (
            StatusCode::CONFLICT,
            Json(json!({
                "success": false,
                "error": "another reload is in progress",
                "inProgressSince": crate::engine::rfc3339(since),
            })),
        )
            .into_response(),
    }
}

/// `GET /admin/config/status`.
pub(super) async fn status(State(s): State<AppState>) -> Json<crate::engine::ConfigStatus> {
    Json(s.engine.status())
}

/// `GET /admin/config`: the exact bytes in force, with their version as ETag.
pub(super) async fn current(State(s): State<AppState>) -> Response {
    let config = s.engine.config();
    (
        [
            (header::CONTENT_TYPE, "application/yaml".to_owned()),
            (header::ETAG, format!("\"{}\"", config.version)),
        ],
        config.bytes.to_vec(),
    )
        .into_response()
}
