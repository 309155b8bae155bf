//! Who may call the mutating endpoints: loopback callers, or anyone with the
//! bearer token from `admin.tokenFile`, compared in constant time.

use std::net::SocketAddr;

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};

use super::error::ApiError;

/// Checks a caller of a mutating endpoint.
pub(crate) fn authorize(
    peer: SocketAddr,
    headers: &HeaderMap,
    token: Option<&str>,
) -> Result<(), ApiError> {
    if is_loopback(peer) {
        return Ok(());
    }
    let Some(token) = token else {
        return Err(ApiError::Forbidden(
            "this endpoint accepts loopback callers only; set admin.tokenFile to allow others with a bearer token",
        ));
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match presented {
        None => Err(ApiError::Unauthorized("a bearer token is required")),
        Some(p) if equal(p.as_bytes(), token.as_bytes()) => Ok(()),
        Some(_) => Err(ApiError::Unauthorized("the bearer token is not valid")),
    }
}

fn is_loopback(peer: SocketAddr) -> bool {
    match peer {
        SocketAddr::V4(a) => a.ip().is_loopback(),
        SocketAddr::V6(a) => {
            a.ip().is_loopback() || a.ip().to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Compares digests of both, in time independent of where they differ (and
/// of their lengths).
fn equal(a: &[u8], b: &[u8]) -> bool {
    let (da, db) = (Sha256::digest(a), Sha256::digest(b));
    da.iter()
        .zip(db.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(a).unwrap());
        }
        h
    }

    #[test]
    fn loopback_callers_need_no_token() {
        for peer in ["127.0.0.1:5000", "[::1]:5000", "[::ffff:127.0.0.1]:5000"] {
            assert_eq!(
                authorize(peer.parse().unwrap(), &headers(None), Some("t")),
                Ok(())
            );
        }
    }

    #[test]
    fn others_need_the_exact_token() {
        let peer: SocketAddr = "10.1.2.3:5000".parse().unwrap();
        assert_eq!(
            authorize(peer, &headers(Some("Bearer s3cret")), Some("s3cret")),
            Ok(())
        );
        assert!(matches!(
            authorize(peer, &headers(None), Some("s3cret")),
            Err(ApiError::Unauthorized(_))
        ));
        assert!(matches!(
            authorize(peer, &headers(Some("Bearer s3cre")), Some("s3cret")),
            Err(ApiError::Unauthorized(_))
        ));
        assert!(matches!(
            authorize(peer, &headers(Some("Basic s3cret")), Some("s3cret")),
            Err(ApiError::Unauthorized(_))
        ));
        assert!(matches!(
            authorize(peer, &headers(Some("Bearer x")), None),
            Err(ApiError::Forbidden(_))
        ));
    }
}
