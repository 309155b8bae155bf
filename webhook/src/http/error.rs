//! The answer to a request that is not a review the webhook can judge: an
//! HTTP error status with `{"error": "…"}` saying what is wrong. Internal
//! failures are logged, not sent.

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use serde_json::json;

use super::MAX_BODY_BYTES;
use crate::review::ReviewError;

/// Why `POST /validate` could not answer with a review.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The body is not declared as JSON (415).
    #[error("content type must be application/json, got {0}")]
    UnsupportedMediaType(String),
    /// The body is larger than [`MAX_BODY_BYTES`] (413).
    #[error("request body is larger than {MAX_BODY_BYTES} bytes")]
    TooLarge,
    /// The body did not arrive in time (408).
    #[error("request body was not received within {0:?}")]
    BodyTimeout(Duration),
    /// The connection failed while the body was read (400).
    #[error("cannot read the request body: {0}")]
    BodyRead(String),
    /// The body is not a v1 AdmissionReview (400).
    #[error(transparent)]
    Review(#[from] ReviewError),
    /// Every review slot is taken (429, `Retry-After: 1`): the webhook
    /// refuses rather than buffer past its memory limit.
    #[error("too many reviews at once; retry")]
    Busy,
    /// A bug; the detail goes to the log only (500).
    #[error("internal error")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::BodyRead(_) | ApiError::Review(_) => StatusCode::BAD_REQUEST,
            ApiError::Busy => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The `result` label of the admissions metric.
    pub fn result(&self) -> &'static str {
        match self {
            ApiError::Internal(_) => "error",
            ApiError::Busy => "busy",
            _ => "malformed",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(detail) = &self {
            tracing::error!(%detail, "admission failed");
        }
        if let ApiError::Busy = &self {
            tracing::warn!("every review slot is taken; refused");
            let retry = [(axum::http::header::RETRY_AFTER, "1")];
            return (
                self.status(),
                retry,
                Json(json!({ "error": self.to_string() })),
            )
                .into_response();
        }
        (self.status(), Json(json!({ "error": self.to_string() }))).into_response()
    }
}
