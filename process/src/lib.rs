//! `sluice-process`: the process skeleton the three binaries share, so each
//! `main.rs` is only "parse the arguments, set up logging, start, serve
//! until a signal, exit with a status".
//!
//! - [`duration`]: the one duration parser and formatter (`500ms`, `30s`,
//!   `2m`, `1h`), overflow-checked; pure, and all there is without the
//!   `runtime` feature (which is how `sluice-config` uses it)
//! - [`log`]: `--log-format text|json` and the `tracing` subscriber
//! - [`signals`]: SIGTERM/SIGINT as a `CancellationToken`, SIGHUP as a stream
//! - [`exit`]: the exit-status convention (0 ok, 1 invalid or failed,
//!   2 usage or I/O) and the runtime a binary runs on
//! - [`http`]: serving a `Router` with header and body read timeouts and
//!   graceful shutdown

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod duration;
#[cfg(feature = "runtime")]
pub mod exit;
#[cfg(feature = "runtime")]
pub mod http;
#[cfg(feature = "runtime")]
pub mod log;
#[cfg(feature = "runtime")]
pub mod signals;

#[cfg(feature = "runtime")]
pub use exit::{Exit, ExitStatus};
#[cfg(feature = "runtime")]
pub use log::{LogFormat, init_tracing};
