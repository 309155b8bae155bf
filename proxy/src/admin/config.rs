//! `/admin/config/*`: validate, reload, status, and the configuration in
//! force. Each handler reads the request, calls the engine and writes its
//! answer; nothing else.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Json, Response};
use sluice_admin_api::{ConfigStatus, endpoints};

use super::auth::authorize;
use super::error::ApiError;
use super::{AppState, MAX_BODY_BYTES, answer};
use crate::engine::Preconditions;

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
    let outcome = tokio::task::spawn_blocking(move || engine.validate(&bytes))
        .await
        .map_err(|_| ApiError::Internal)?;
    let answer = answer::validate(outcome);
    Ok((answer::status(answer.status()), Json(answer)).into_response())
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
    let precondition = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().trim_matches('"').to_owned())
    };
    let if_match = precondition(endpoints::IF_MATCH);
    let if_effective = precondition(endpoints::IF_EFFECTIVE_MATCH);
    let engine = Arc::clone(&s.engine);
    let outcome = tokio::task::spawn_blocking(move || {
        let pre = Preconditions {
            config: if_match.as_deref(),
            effective: if_effective.as_deref(),
        };
        engine.reload_if(&bytes, pre)
    })
    .await
    .map_err(|_| ApiError::Internal)?;
    let answer = answer::reload(outcome);
    Ok((answer::status(answer.status()), Json(answer)).into_response())
}

/// `GET /admin/config/status`.
pub(super) async fn status(State(s): State<AppState>) -> Json<ConfigStatus> {
    Json(s.engine.status())
}

/// `GET /admin/config`: the exact bytes in force, with their version as ETag.
pub(super) async fn current(State(s): State<AppState>) -> Response {
    let config = s.engine.config();
    (
        [
            (header::CONTENT_TYPE, endpoints::YAML.to_owned()),
            (header::ETAG, format!("\"{}\"", config.version)),
        ],
        config.bytes.to_vec(),
    )
        .into_response()
}
