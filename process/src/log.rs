//! Logging: one `tracing` subscriber set-up for every binary, writing to
//! stderr (stdout belongs to `check` and `diff` output) as text for people
//! or JSON lines for log pipelines.

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// The environment variable that sets the level first (e.g. `info`,
/// `sluice_proxy=debug`); `RUST_LOG` is read when it is unset.
pub const LOG_ENV: &str = "SLUICE_LOG";

/// How logs are written (to stderr).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, the event's fields at the top level and
    /// the current span alongside.
    Json,
}

/// Installs the process's subscriber. The filter comes from `SLUICE_LOG`,
/// else `RUST_LOG`, else `default_filter`; a variable that does not parse
/// falls back to the next. Does nothing if a subscriber is already set
/// (a test that runs a program in-process twice).
pub fn init_tracing(format: LogFormat, default_filter: &str) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(default_filter))
        .with_writer(std::io::stderr);
    let _already_set = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
    };
}

fn filter(default_filter: &str) -> EnvFilter {
    EnvFilter::try_from_env(LOG_ENV)
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new(default_filter))
}
