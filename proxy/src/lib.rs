//! `sluice-proxy`: a Kafka proxy whose configuration changes without restarts.
//!
//! - `filter`: the request filter chain, built from `sluice-config`'s specs
//! - [`dataplane`]: listeners, connections and upstream access
//! - [`metrics`]: the Prometheus registry
//! - `budget`: the process-wide budget of buffered bytes
//! - `audit`: the data plane's audit lines, bounded per event
//! - [`lifecycle`]: the pure state machine of a cluster generation
//! - [`engine`]: generations and listeners; startup, prepare and commit
//! - [`events`]: notable control-plane events, logged and counted together
//! - [`frontdoor`]: the front-door check, a cluster's gateway as a client sees it
//! - [`observe`]: what the engine's analysis observes in production: the
//!   front door and the signals
//! - `quota`: what the quota filter measures of each cluster's clients
//! - [`signals`]: what the data plane counts of each cluster's clients, and
//!   the rule that judges a version by them
//! - [`admin`]: the admin HTTP API
//! - [`server`]: `sluice-proxy run`
//! - [`cli`]: the command line, drivable in-process

#![deny(clippy::print_stdout, clippy::print_stderr)]

/// The configuration crate, under the name the proxy's modules use.
pub use sluice_config as config;

pub mod admin;
mod audit;
mod budget;
mod certs;
pub mod cli;
mod dataplane;
pub mod engine;
mod events;
mod filter;
pub mod frontdoor;
mod lifecycle;
pub mod metrics;
pub mod observe;
mod quota;
pub mod server;
pub mod signals;
