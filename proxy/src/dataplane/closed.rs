//! What the log says of a connection that closed on an error: each cause
//! at the level it deserves, and errors a client caused counted and
//! rate-limited (a client sending garbage in a loop cannot flood the log).

use std::fmt::Debug;
use std::net::SocketAddr;

use super::cluster::ClusterRuntime;
use super::direction::ConnError;
use super::refused::Unauthenticated;
use super::upstream;
use crate::audit::{Event, Line, Names};
use crate::metrics::ClientCause;

/// Says why a connection closed on an error, at the level its cause
/// deserves.
pub(super) fn log(cluster: &ClusterRuntime, e: &ConnError, peer: SocketAddr, role: impl Debug) {
    let (name, generation) = (cluster.name(), cluster.generation);
    audit(cluster, e, peer);
    match e {
        ConnError::Io(_) | ConnError::ClosedMidFrame => {
            tracing::debug!(error = %e, "connection ended")
        }
        // Said once per cause by the lookup itself.
        ConnError::Upstream(upstream::UpstreamError::Lookup { .. }) => {
            tracing::debug!(error = %e, "connection closed")
        }
        // A configuration to fix: said at each attempt.
        ConnError::Upstream(upstream::UpstreamError::Itself(_)) => {
            tracing::warn!(cluster = %name, generation, %peer, role = ?role, error = %e, "connection closed: the upstream address is the proxy's own")
        }
        ConnError::Upstream(u) if u.is_auth() => {
            tracing::warn!(cluster = %name, generation, %peer, role = ?role, error = %e, "connection closed: the upstream refused the proxy's own lookup")
        }
        // Meant: the operator took the principal out; one line per connection.
        ConnError::Revoked(_) => {
            tracing::info!(cluster = %name, generation, %peer, role = ?role, error = %e, "connection closed: its principal was revoked")
        }
        ConnError::SessionExpired => {
            tracing::info!(cluster = %name, generation, %peer, role = ?role, error = %e, "connection closed: its SASL session ended")
        }
        ConnError::Upstream(_) | ConnError::Tls(_) | ConnError::WriteTimeout(_) => {
            tracing::info!(cluster = %name, generation, %peer, role = ?role, error = %e, "connection closed")
        }
        _ => match e.client_cause() {
            Some(cause) => client_warning(cluster, cause, e, peer, role),
            None => {
                tracing::warn!(cluster = %name, generation, %peer, role = ?role, error = %e, "connection closed on protocol error")
            }
        },
    }
}

/// Counts an error a client caused and warns about it, at most once per
/// cause per 10 s per cluster (the line says how many were not): a client
/// sending garbage in a loop cannot flood the log.
fn client_warning(
    cluster: &ClusterRuntime,
    cause: ClientCause,
    e: &ConnError,
    peer: SocketAddr,
    role: impl Debug,
) {
    let Some(suppressed) = cluster.metrics.client_error(cause) else {
        tracing::debug!(error = %e, "connection closed on protocol error");
        return;
    };
    let (name, generation, cause) = (cluster.name(), cluster.generation, cause.as_str());
    tracing::warn!(cluster = %name, generation, %peer, role = ?role, cause, suppressed, error = %e, "connection closed on protocol error");
}

/// The audit line of a connection closed for want of an identity: a
/// failed (or skipped) authentication, a certificate no rule maps, a
/// principal revoked.
fn audit(cluster: &ClusterRuntime, e: &ConnError, peer: SocketAddr) {
    let (principal, operation, outcome) = match e {
        ConnError::Unauthenticated(Unauthenticated::Failed {
            mechanism, user, ..
        }) => (Some(user.as_str()), mechanism.as_str(), "failed"),
        ConnError::Unauthenticated(_) => (None, "sasl", "failed"),
        ConnError::NoPrincipal(_) => (None, "mtls", "no principal"),
        ConnError::NotYetAuthenticated(_) => (None, "sasl", "no principal"),
        ConnError::Revoked(p) => (Some(p.as_str()), "revocation", "revoked"),
        ConnError::SessionExpired => (None, "sasl", "session ended"),
        _ => return,
    };
    let line = Line {
        event: Event::Authentication,
        principal,
        client_id: "",
        peer: Some(peer.ip()),
        operation,
        resources: &Names::default(),
        outcome,
    };
    cluster.audit.write(cluster.name(), &line);
}
