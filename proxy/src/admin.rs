//! The admin HTTP API, served on `admin.listen`: configuration validate,
//! reload, release (of a proxy started held), status and content; clusters;
//! health, readiness and metrics.
//!
//! The handlers only translate HTTP: the engine does the work
//! ([`Engine::validate`], [`Engine::reload`], persisting included) and the
//! answers are the types of `sluice-admin-api`, which the watcher and the
//! tests read back.
//!
//! - `config`: the configuration endpoints
//! - `answer`: the engine's outcomes as the admin API's answers
//! - `auth`: who may call the mutating ones (pure, on the request's head)
//! - `guard`: the middleware that applies `auth` before a body is read
//! - `events`: refused callers and connections, logged and counted; the
//!   audit line of every mutating call
//! - [`error`]: the JSON error type
//! - `serve`: connections, capped, with a header timeout and a total body
//!   deadline
//! - `tls`: HTTPS when `admin.tls` is set, its certificate following reloads

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use sluice_admin_api::endpoints;
use sluice_admin_api::{Clusters, ErrorBody, Health, Readiness};

use crate::config::MAX_CONFIG_BYTES;
use crate::engine::Engine;

mod answer;
mod auth;
mod config;
pub mod error;
pub(crate) mod events;
mod guard;
mod serve;
mod tls;

pub use guard::{FAILURE_DELAY, MAX_DELAYED};
pub use serve::MAX_CONNECTIONS;
pub use tls::AdminTlsError;

/// Largest request body: a configuration at its size limit, with room for
/// the validator to report the excess itself.
pub const MAX_BODY_BYTES: usize = MAX_CONFIG_BYTES + 1;

/// What every handler needs.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The running proxy.
    pub engine: Arc<Engine>,
}

/// The admin API's routes. Mutating endpoints look at the caller's address,
/// a `ConnectInfo<SocketAddr>` request extension ([`serve`] adds it), and
/// refused tokens wait [`FAILURE_DELAY`]. Registers the admin API's metrics
/// in the engine's registry: build it once per engine.
pub fn router(state: AppState) -> Router {
    let events = events::AdminEvents::new(state.engine.metrics());
    routes(state, events)
}

fn routes(state: AppState, events: events::AdminEvents) -> Router {
    let guard = guard::Guard::new(Arc::clone(&state.engine), events);
    // The gate runs on these routes only, before their handlers read the body.
    let mutating = Router::new()
        .route(endpoints::VALIDATE, post(config::validate))
        .route(endpoints::RELOAD, post(config::reload))
        .route(endpoints::RELEASE, post(config::release))
        .route_layer(middleware::from_fn_with_state(guard, guard::admit));
    Router::new()
        .merge(mutating)
        .route(endpoints::STATUS, get(config::status))
        .route(endpoints::CONFIG, get(config::current))
        .route(endpoints::CLUSTERS, get(clusters))
        .route(endpoints::HEALTH, get(health))
        .route(endpoints::READY, get(ready))
        .route(endpoints::METRICS, get(metrics))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Serves the router on a bound listener until `shutdown` completes; a
/// request's headers must arrive within `read_timeout` (its whole body
/// within three times that), and at most [`MAX_CONNECTIONS`] are open.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    read_timeout: std::time::Duration,
    shutdown: tokio_util::sync::CancellationToken,
) {
    serve_with(listener, state, None, read_timeout, shutdown).await;
}

/// The TLS settings that make the admin listener HTTPS when the configuration
/// in force sets `admin.tls`; `None`: plain HTTP. Its certificate follows
/// the configuration in force (a reload renews it).
pub fn tls_config(
    engine: &Arc<Engine>,
) -> Result<Option<Arc<rustls::ServerConfig>>, AdminTlsError> {
    tls::AdminCert::server_config(engine)
}

/// [`serve`], over HTTPS when `tls` is given ([`tls_config`]): then every
/// connection must complete a TLS handshake within `read_timeout` first.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    state: AppState,
    tls: Option<Arc<rustls::ServerConfig>>,
    read_timeout: std::time::Duration,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let events = events::AdminEvents::new(state.engine.metrics());
    let app = routes(state, events.clone());
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    serve::serve(listener, app, tls, events, read_timeout, shutdown).await;
}

async fn health() -> Json<Health> {
    Json(Health::default())
}

async fn ready(State(s): State<AppState>) -> Response {
    let answer = Readiness {
        ready: s.engine.serves(),
    };
    (answer::status(answer.status()), Json(answer)).into_response()
}

async fn clusters(State(s): State<AppState>) -> Json<Clusters> {
    Json(s.engine.clusters())
}

async fn metrics(State(s): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.engine.metrics().encode(),
    )
        .into_response()
}

async fn not_found() -> Response {
    let body = ErrorBody {
        error: "no such endpoint".to_owned(),
    };
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}
