//! `sluice-watcher`: notices a new configuration (a ConfigMap volume's
//! `..data` swap, or a plain file changing), waits this pod's own delay, and
//! asks the proxy to validate and then reload it, retrying with backoff.
//!
//! - `volume`: watching one file for new content, from `sluice-volume`
//!   (shared with the webhook, which picks up rotated certificates with it)
//! - [`schedule`]: this pod's slot and delay
//! - [`target`]: what a rollout is of (shared by the decider and the gate)
//! - [`fleet`]: slots by rank among peers, the canary gate, `fleet` view
//! - [`heartbeat`]: liveness of the loop (a wait at the gate counts)
//! - [`client`]: the proxy's admin API
//! - [`decide`]: the loop's next step, a pure function of what it observed
//!   and what it remembers
//! - [`referenced`]: the files the configuration references, watched, and
//!   the effective version of what the watcher sees
//! - [`retry`]: jittered exponential backoff (the one use of `backoff`)
//! - [`run`]: the loop: wait, validate, reload, resync
//! - [`metrics`]: metrics and the events they count
//! - [`events`]: Kubernetes Events on the watcher's own pod (`--events`)
//! - [`http`]: `/healthz` and `/metrics`, with read timeouts
//! - [`token`]: the admin token, re-read from its file after a 401
//! - [`tls`]: HTTPS towards admin APIs (`--proxy-ca`)
//! - [`app`]: the program: start (token, client, port), then serve until
//!   shutdown
//! - [`cli`]: the command line

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod app;
pub mod cli;
pub mod client;
pub mod decide;
pub mod events;
pub mod fleet;
pub mod heartbeat;
pub mod http;
pub mod metrics;
pub mod referenced;
pub mod retry;
pub mod run;
pub mod schedule;
pub mod target;
pub mod tls;
pub mod token;
/// Watching one file for new content (the shared leaf crate).
pub use sluice_volume::watch as volume;
