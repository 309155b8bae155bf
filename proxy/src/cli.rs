//! The command line: `check` and `diff`. Output goes to the writers passed in,
//! so tests drive the same code in-process.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::config::{self, ConfigError, LocalFiles, ValidConfig, read_config};

mod check;
mod diff;

/// Exit code: everything checked is valid.
pub const EXIT_VALID: u8 = 0;
/// Exit code: a configuration is invalid.
pub const EXIT_INVALID: u8 = 1;
/// Exit code: bad usage, or a file could not be read.
pub const EXIT_USAGE: u8 = 2;

/// Kafka proxy with virtual clusters and hot, all-or-nothing configuration reload.
#[derive(Debug, Parser)]
#[command(name = "sluice-proxy", version, about, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate configuration files with exactly the rules the proxy and the
    /// admission webhook use. Exit status: 0 all valid, 1 any invalid, 2 a
    /// file could not be read.
    Check(CheckArgs),
    /// Run the proxy: serve every virtual cluster of the configuration and the
    /// admin API; reload FILE on SIGHUP; on SIGTERM or SIGINT become not
    /// ready, drain connections for up to drainTimeout and exit 0. Exit status 1 if the configuration is invalid
    /// or clusters fail to start (fail-fast), 2 if the file cannot be read.
    Run(RunArgs),
    /// Show what reloading from OLD to NEW would do to each virtual cluster:
    /// added, removed, modified (with reasons) or unchanged. Exit status: 0
    /// both valid, 1 either invalid, 2 a file could not be read.
    Diff(DiffArgs),
}

/// Arguments of `check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Configuration files to check. Relative paths inside a file (TLS files,
    /// the token file) are read relative to that file's directory.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format: `text` prints `file:line:column: path: message` per
    /// error; `json` prints one object for machines.
    #[arg(long, value_enum, default_value_t = Format::Text, env = "SLUICE_FORMAT")]
    pub format: Format,
    /// Check that referenced files (TLS, token) are named, but do not read
    /// them: for a configuration whose files exist only where the proxy runs
    /// (a ConfigMap whose certificates come from a Secret). This is what the
    /// admission webhook checks by default.
    #[arg(long, env = "SLUICE_PATHS_ONLY")]
    pub paths_only: bool,
}

/// Arguments of `run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The configuration file. Relative paths inside it are read relative to
    /// its directory.
    #[arg(long, value_name = "FILE", env = "SLUICE_CONFIG")]
    pub config: PathBuf,
    /// After each reload through the admin API, write the applied
    /// configuration back to FILE atomically (temporary file + rename), so a
    /// restart starts from it. Does nothing on a read-only filesystem.
    #[arg(long, env = "SLUICE_PERSIST")]
    pub persist: bool,
    /// How long a caller of the admin API may take to send a request's
    /// headers (its body may take three times as long); a stalled caller is
    /// disconnected. Written like durations in the configuration: 10s, 500ms.
    #[arg(long, default_value = "10s", value_parser = crate::config::types::parse_duration, env = "SLUICE_ADMIN_READ_TIMEOUT")]
    pub admin_read_timeout: std::time::Duration,
    /// Log format: `text` for people, `json` (one object per line) for log
    /// pipelines. The level comes from SLUICE_LOG (e.g. `info`,
    /// `sluice_proxy=debug`), default `info`.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, env = "SLUICE_LOG_FORMAT")]
    pub log_format: LogFormat,
}

/// How logs are written (to stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Arguments of `diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The configuration in force now.
    #[arg(value_name = "OLD")]
    pub old: PathBuf,
    /// The configuration a reload would apply.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text, env = "SLUICE_FORMAT")]
    pub format: Format,
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For people.
    Text,
    /// For machines.
    Json,
}

/// Runs `check`, writing results to `out` and problems to `err`.
pub fn check(args: &CheckArgs, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode {
    ExitCode::from(check::run(args, out, err))
}

/// Runs `diff`, writing results to `out` and problems to `err`.
pub fn diff(args: &DiffArgs, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode {
    ExitCode::from(diff::run(args, out, err))
}

/// Reads and validates one file, with relative paths taken from its
/// directory (or, with `paths_only`, without reading referenced files).
fn load(path: &Path, paths_only: bool) -> io::Result<Result<ValidConfig, Vec<ConfigError>>> {
    let bytes = read_config(path)?;
    Ok(if paths_only {
        config::validate(&bytes, &config::PathsOnly)
    } else {
        config::validate(&bytes, &LocalFiles::beside(path))
    })
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
