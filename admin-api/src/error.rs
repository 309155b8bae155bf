//! The error body every failure without a shape of its own answers with, and
//! what reading an answer back gives when the status is not one the endpoint
//! documents.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The body of a failure: 401 and 403 (the caller), 404 (no such endpoint),
/// 408 and 413 (the request body), 500 (a bug; details are in the proxy's
/// log, never in the answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// What went wrong, for a human: a caller shows it as it is.
    pub error: String,
}

/// An answer with a status the endpoint does not document for a shape of its
/// own, or a body that is not that shape: a failure to show, not to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The HTTP status, which tells a caller whether trying again may help
    /// (5xx) or not (4xx).
    pub status: u16,
    /// The [`ErrorBody`]'s message, or else the body as text.
    pub message: String,
}

impl Refused {
    /// Reads a failure's body: the [`ErrorBody`] message, else the text.
    pub fn new(status: u16, body: &[u8]) -> Refused {
        let message = match serde_json::from_slice::<ErrorBody>(body) {
            Ok(e) => e.error,
            Err(_) => String::from_utf8_lossy(body).into_owned(),
        };
        Refused { status, message }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}: {}", self.status, self.message)
    }
}

impl std::error::Error for Refused {}

/// Reads `body` as `T`, or says why not as a [`Refused`] with `status`.
pub(crate) fn read<T: serde::de::DeserializeOwned>(status: u16, body: &[u8]) -> Result<T, Refused> {
    serde_json::from_slice(body).map_err(|e| Refused {
        status,
        message: format!("unexpected answer ({e}): {}", String::from_utf8_lossy(body)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roundtrip::roundtrip;

    #[test]
    fn roundtrips() {
        let e: ErrorBody = roundtrip(r#"{"error": "a bearer token is required"}"#);
        assert_eq!(e.error, "a bearer token is required");
    }

    #[test]
    fn a_refusal_carries_the_message_or_the_text() {
        let r = Refused::new(403, br#"{"error": "loopback callers only"}"#);
        assert_eq!(r.to_string(), "HTTP 403: loopback callers only");
        assert_eq!(Refused::new(502, b"bad gateway").message, "bad gateway");
    }
}
