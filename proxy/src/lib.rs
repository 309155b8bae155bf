//! `sluice-proxy`: a Kafka proxy whose configuration changes without restarts.
//!
//! - [`config`]: the one definition of a valid configuration, its version and diff
//! - [`filter`]: the request filter chain and its registry
//! - [`kafka`]: framing, address rewriting, ApiVersions capping, error responses
//! - [`cli`]: the `check` and `diff` subcommands, drivable in-process

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod config;
pub mod filter;
pub mod kafka;
