//! `/admin/config/*`: validate, reload, release, status, and the
//! configuration in force. Each handler reads the request, calls the engine, writes its
//! answer and, for the mutating ones, the audit line; nothing else (`guard`
//! admitted the caller before).

use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Json, Response};
use sluice_admin_api::{
    ConfigStatus, ConfigVersion, Released, ReloadAnswer, ValidateAnswer, endpoints,
};

use super::error::ApiError;
use super::events::{Caller, audit};
use super::{AppState, MAX_BODY_BYTES, answer};
use crate::engine::{Preconditions, Release};

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

/// The body, or why it could not be read (its audit line written).
fn audited_body(
    raw: Result<Bytes, BytesRejection>,
    caller: &Caller,
    endpoint: &str,
) -> Result<Bytes, ApiError> {
    body(raw).inspect_err(|e| audit(caller, endpoint, None, None, error_outcome(e)))
}

/// The answer to a call whose engine task failed (its audit line written).
fn internal(caller: &Caller, endpoint: &str, version: &ConfigVersion) -> Response {
    audit(
        caller,
        endpoint,
        Some(version.as_str()),
        None,
        "internal_error",
    );
    ApiError::Internal.into_response()
}

/// How a call that never reached the engine ended, for the audit line.
fn error_outcome(e: &ApiError) -> &'static str {
    match e {
        ApiError::TooLarge(_) => "too_large",
        ApiError::SlowBody => "slow_body",
        ApiError::BadBody(_) => "bad_body",
        ApiError::Unauthorized(_) | ApiError::Forbidden(_) => "refused",
        ApiError::Internal => "internal_error",
    }
}

/// `POST /admin/config/validate`: every error, or what a reload would change.
pub(super) async fn validate(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    const ENDPOINT: &str = endpoints::VALIDATE;
    let bytes = match audited_body(raw, &caller, ENDPOINT) {
        Ok(bytes) => bytes,
        Err(refused) => return refused.into_response(),
    };
    let version = crate::config::config_version(&bytes);
    let engine = Arc::clone(&s.engine);
    let answer = match tokio::task::spawn_blocking(move || engine.validate(&bytes)).await {
        Ok(outcome) => answer::validate(outcome),
        Err(_) => return internal(&caller, ENDPOINT, &version),
    };
    let outcome = match &answer {
        ValidateAnswer::Valid(_) => "valid",
        ValidateAnswer::Invalid(_) => "invalid",
    };
    audit(&caller, ENDPOINT, Some(version.as_str()), None, outcome);
    (answer::status(answer.status()), Json(answer)).into_response()
}

/// `POST /admin/config/reload`: prepare, then commit; nothing changes on failure.
pub(super) async fn reload(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    const ENDPOINT: &str = endpoints::RELOAD;
    let bytes = match audited_body(raw, &caller, ENDPOINT) {
        Ok(bytes) => bytes,
        Err(refused) => return refused.into_response(),
    };
    let version = crate::config::config_version(&bytes);
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
        engine.attempt_reload(&bytes, pre)
    })
    .await;
    let (attempt, answer) = match outcome {
        Ok(done) => {
            // A reload that applies, while held (`run --hold`), says which
            // version to serve.
            s.engine.release_after(&done.outcome);
            (
                done.attempt,
                answer::reload(done.outcome).numbered(done.attempt, done.version),
            )
        }
        Err(_) => return internal(&caller, ENDPOINT, &version),
    };
    audit(
        &caller,
        ENDPOINT,
        Some(version.as_str()),
        Some(attempt),
        reload_outcome(&answer),
    );
    (answer::status(answer.status()), Json(answer)).into_response()
}

/// `POST /admin/config/release`: a proxy started held serves the version
/// it holds from now on; a proxy not held stays as it is. No body.
pub(super) async fn release(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let released = s.engine.release(Release::Endpoint);
    let version = s.engine.config().version;
    let outcome = if released { "released" } else { "not_held" };
    audit(
        &caller,
        endpoints::RELEASE,
        Some(version.as_str()),
        None,
        outcome,
    );
    let answer = Released {
        released,
        current_config_version: version,
    };
    Json(answer).into_response()
}

/// How a reload ended, in the audit line.
fn reload_outcome(answer: &ReloadAnswer) -> &'static str {
    match answer {
        ReloadAnswer::Applied(a) if a.changed => "applied",
        ReloadAnswer::Applied(_) => "unchanged",
        ReloadAnswer::Rejected(_) => "rejected",
        ReloadAnswer::Busy(_) => "conflict",
        ReloadAnswer::PreconditionFailed(_) => "precondition_failed",
        ReloadAnswer::Failed(_) => "failed",
        ReloadAnswer::ShuttingDown(_) => "shutting_down",
    }
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
