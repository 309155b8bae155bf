//! `sluice-proxy`: a Kafka proxy whose configuration changes without restarts.
//!
//! - [`config`]: the one definition of a valid configuration, its version and diff
//! - [`filter`]: the request filter chain and its registry
//! - [`kafka`]: framing, address rewriting, ApiVersions capping, error responses
//! - [`dataplane`]: listeners, connections and upstream access
//! - [`metrics`]: the Prometheus registry
//! - [`lifecycle`]: the pure state machine of a cluster generation
//! - [`engine`]: generations and listeners; startup, prepare and commit
//! - [`events`]: notable control-plane events, logged and counted together
//! - [`admin`]: the admin HTTP API
//! - [`server`]: `sluice-proxy run`
//! - [`cli`]: the command line, drivable in-process

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod admin;
pub mod cli;
pub mod config;
pub mod dataplane;
pub mod engine;
pub mod events;
pub mod filter;
pub mod kafka;
pub mod lifecycle;
pub mod metrics;
pub mod server;
