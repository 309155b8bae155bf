//! Who may call the mutating endpoints, decided on the request's head alone
//! (pure: no clock, no I/O; `guard` runs it before the body is read).
//!
//! - A request from a web page (an `Origin` header) is refused, whoever
//!   sends it.
//! - With `admin.tokenFile`, every caller presents `Authorization: Bearer
//!   <token>`, loopback included: a service-mesh sidecar (127.0.0.6),
//!   `kubectl port-forward` and every local user arrive from loopback. Any
//!   `Host` may be named then (a Service's DNS name, say): a page that
//!   rebinds a name to the proxy cannot present the token.
//! - Without a token, loopback callers only, naming a loopback or the
//!   listener's own address as `Host` (a rebound name is refused: nothing
//!   else would stop a page on the same host).
//!
//! Tokens are compared in constant time, and known by their
//! [`fingerprint`], never by their text.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};

use super::error::ApiError;

/// Why a caller was refused; `reason()` is the metric's label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The request carries an `Origin` header: a browser sent it.
    Origin,
    /// No token is configured and the `Host` header names neither this
    /// listener's address nor loopback.
    Host,
    /// No token is configured and the caller is not on loopback.
    NotLoopback,
    /// A token is configured and none was presented.
    MissingToken,
    /// A token is configured and another was presented.
    WrongToken,
}

impl Refusal {
    /// Every refusal, for metrics that exist at 0 from the start.
    pub(crate) const ALL: [Refusal; 5] = [
        Refusal::Origin,
        Refusal::Host,
        Refusal::NotLoopback,
        Refusal::MissingToken,
        Refusal::WrongToken,
    ];

    /// The label of `sluice_admin_auth_failures_total{reason}`.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Refusal::Origin => "origin",
            Refusal::Host => "host",
            Refusal::NotLoopback => "not_loopback",
            Refusal::MissingToken => "missing_token",
            Refusal::WrongToken => "wrong_token",
        }
    }

    /// Whether the caller tried a token (and is slowed down for it).
    pub(crate) fn is_token(self) -> bool {
        matches!(self, Refusal::MissingToken | Refusal::WrongToken)
    }

    /// The answer the caller gets.
    pub(crate) fn error(self) -> ApiError {
        match self {
            Refusal::Origin => {
                ApiError::Forbidden("requests with an Origin header (from a web page) are refused")
            }
            Refusal::Host => ApiError::Forbidden(
                "without admin.tokenFile, the Host header must name this listener's address, localhost, 127.0.0.1 or [::1]",
            ),
            Refusal::NotLoopback => ApiError::Forbidden(
                "this endpoint accepts loopback callers only; set admin.tokenFile to allow others with a bearer token",
            ),
            Refusal::MissingToken => ApiError::Unauthorized("a bearer token is required"),
            Refusal::WrongToken => ApiError::Unauthorized("the bearer token is not valid"),
        }
    }
}

/// A request's head as far as authorization looks at it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Head<'a> {
    /// The caller's address.
    pub(crate) peer: SocketAddr,
    /// The address the caller connected to (`None`: unknown, only
    /// loopback names are then accepted as `Host`).
    pub(crate) local: Option<SocketAddr>,
    /// The request's headers.
    pub(crate) headers: &'a HeaderMap,
}

/// Checks a caller of a mutating endpoint against `token` (the one in
/// force). On success, the fingerprint of the token presented, if one was
/// required.
pub(crate) fn authorize(head: Head<'_>, token: Option<&str>) -> Result<Option<String>, Refusal> {
    if head.headers.contains_key(header::ORIGIN) {
        return Err(Refusal::Origin);
    }
    let Some(token) = token else {
        if !host_allowed(head.headers, head.local) {
            return Err(Refusal::Host);
        }
        return match is_loopback(head.peer) {
            true => Ok(None),
            false => Err(Refusal::NotLoopback),
        };
    };
    let presented = head
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match presented {
        None => Err(Refusal::MissingToken),
        Some(p) if equal(p.as_bytes(), token.as_bytes()) => Ok(Some(fingerprint(token))),
        Some(_) => Err(Refusal::WrongToken),
    }
}

/// A token's identity in logs: the first 12 hex digits of
/// `sha256("sluice-admin-token:" + token)`. It tells two tokens apart and
/// says nothing usable about either.
pub(crate) fn fingerprint(token: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"sluice-admin-token:")
        .chain_update(token.as_bytes())
        .finalize();
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// No `Host` (HTTP/1.0), or one naming loopback or the address the caller
/// connected to, with any port (`kubectl port-forward` maps ports).
fn host_allowed(headers: &HeaderMap, local: Option<SocketAddr>) -> bool {
    let Some(host) = headers.get(header::HOST) else {
        return true;
    };
    let Ok(host) = host.to_str() else {
        return false;
    };
    let name = strip_port(host.trim()).to_ascii_lowercase();
    if matches!(name.as_str(), "localhost" | "127.0.0.1" | "[::1]") {
        return true;
    }
    let Some(local) = local else {
        return false;
    };
    let ip = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(&name);
    ip.parse::<IpAddr>()
        .is_ok_and(|ip| ip == local.ip() || Some(ip) == mapped_v4(local.ip()))
}

/// `host` without its `:port`, if any (`[v6]:port` keeps its brackets).
fn strip_port(host: &str) -> &str {
    match host.rfind(':') {
        Some(i)
            if !host[i..].contains(']') && (host.starts_with('[') || !host[..i].contains(':')) =>
        {
            &host[..i]
        }
        _ => host,
    }
}

fn mapped_v4(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4),
        IpAddr::V4(_) => None,
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
mod tests;
