//! The admin API's one error type: a status and a human message as an
//! [`ErrorBody`].
//! Internals are logged where they happen, never sent.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use sluice_admin_api::ErrorBody;

/// An error answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// No or a wrong bearer token.
    #[error("{0}")]
    Unauthorized(&'static str),
    /// Not allowed at all from this caller.
    #[error("{0}")]
    Forbidden(&'static str),
    /// The body is larger than a configuration may be.
    #[error("request body is larger than {0} bytes")]
    TooLarge(usize),
    /// The body did not arrive within the read timeout.
    #[error("the request body did not arrive in time")]
    SlowBody,
    /// The body could not be read.
    #[error("cannot read the request body: {0}")]
    BadBody(String),
    /// The running blocking task failed (a bug).
    #[error("internal error; see the proxy's log")]
    Internal,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match self {
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::SlowBody => StatusCode::REQUEST_TIMEOUT,
            ApiError::BadBody(_) => StatusCode::BAD_REQUEST,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = ErrorBody {
            error: self.to_string(),
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}
