//! The gate in front of the mutating endpoints: a middleware that runs on
//! the request's head, so a caller without the token is answered before a
//! byte of its body is read. A refused token is answered after
//! [`FAILURE_DELAY`], at most [`MAX_DELAYED`] at a time (the others wait
//! their turn, and the admin connection cap bounds how many wait): guessing
//! is slow, and never costs more than the capped connections.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use super::auth::{Head, authorize};
use super::error::ApiError;
use super::events::{AdminEvents, Caller};
use crate::engine::Engine;

/// How long a caller with a missing or wrong token waits for its 401.
pub const FAILURE_DELAY: Duration = Duration::from_secs(1);

/// How many refused callers wait out their delay at once.
pub const MAX_DELAYED: usize = 16;

/// The address a connection was accepted on (the admin server adds it to
/// every request): the `Host` a caller may name besides loopback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LocalAddr(pub(crate) SocketAddr);

/// What the gate needs.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    engine: Arc<Engine>,
    events: AdminEvents,
    delayed: Arc<Semaphore>,
}

impl Guard {
    /// A gate checking against the token in force in `engine`.
    pub(crate) fn new(engine: Arc<Engine>, events: AdminEvents) -> Guard {
        Guard {
            engine,
            events,
            delayed: Arc::new(Semaphore::new(MAX_DELAYED)),
        }
    }

    async fn slow_down(&self) {
        // The semaphore is never closed.
        let _turn = self.delayed.acquire().await;
        tokio::time::sleep(FAILURE_DELAY).await;
    }
}

/// Admits the caller (adding its [`Caller`] to the request for the audit
/// line) or answers 401/403 at once, the body unread.
pub(crate) async fn admit(
    State(guard): State<Guard>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(ConnectInfo(peer)) = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .copied()
    else {
        tracing::error!("admin request without the caller's address");
        return ApiError::Internal.into_response();
    };
    let local = request.extensions().get::<LocalAddr>().map(|l| l.0);
    let verdict = {
        let config = guard.engine.config();
        let token = config.config.admin.token.as_ref().map(|t| t.0.as_str());
        let head = Head {
            peer,
            local,
            headers: request.headers(),
        };
        authorize(head, token)
    };
    match verdict {
        Ok(fingerprint) => {
            request.extensions_mut().insert(Caller {
                from: peer.to_string(),
                token: fingerprint,
            });
            next.run(request).await
        }
        Err(refusal) => {
            guard.events.refused(peer, request.uri().path(), refusal);
            if refusal.is_token() {
                guard.slow_down().await;
            }
            refusal.error().into_response()
        }
    }
}
