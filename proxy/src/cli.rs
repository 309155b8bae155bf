//! The command line: `check` and `diff`. Output goes to the writers passed in,
//! so tests drive the same code in-process.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use sluice_process::Exit;
pub use sluice_process::LogFormat;

use crate::config::{self, ConfigProblem, LocalFiles, ValidConfig, read_config};
pub use crate::dataplane::splice::Splicing;
use crate::server::RunOptions;

mod check;
mod diff;
mod scram;

pub use scram::ScramArgs;

/// Exit code: everything checked is valid.
pub const EXIT_VALID: u8 = Exit::Ok.code();
/// Exit code: a configuration is invalid.
pub const EXIT_INVALID: u8 = Exit::Invalid.code();
/// Exit code: bad usage, or a file could not be read.
pub const EXIT_USAGE: u8 = Exit::Usage.code();

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
    /// Print a line of the SCRAM credentials file that
    /// `authentication.sasl.credentialsFile` names: a user's salted keys
    /// (never the password) for SCRAM-SHA-512 and SCRAM-SHA-256. The
    /// password is read from the first line of standard input. Append the
    /// output to the file; a reload (or the watcher) applies it in place.
    /// Exit status: 0 printed, 2 bad usage.
    ScramCredential(ScramArgs),
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
    /// Where referenced files may lie.
    #[command(flatten)]
    pub roots: FileRootArgs,
}

/// `--file-root`, shared by `run`, `check` and `diff`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FileRootArgs {
    /// A directory the files the configuration references (TLS material,
    /// SASL credentials, the admin token) may lie beneath; repeatable, or
    /// comma-separated. A path that leaves every root (absolute, with `..`,
    /// or through a symlink whose target is outside) is a validation error,
    /// so whoever may edit the configuration cannot have the proxy read,
    /// or send upstream, any other file. Symlinks inside a root are
    /// followed (Secret volumes). Default: the configuration file's
    /// directory. In Kubernetes, name each mount: the ConfigMap's, each
    /// Secret's.
    #[arg(
        long = "file-root",
        value_name = "DIR",
        env = "SLUICE_FILE_ROOTS",
        value_delimiter = ','
    )]
    pub file_roots: Vec<PathBuf>,
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
    /// disconnected. Written like durations in the configuration: 10s,
    /// 500ms; more than 0s, at most 24h.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = sluice_process::duration::parse_positive_flag, env = "SLUICE_ADMIN_READ_TIMEOUT")]
    pub admin_read_timeout: std::time::Duration,
    /// Log format: `text` for people, `json` (one object per line) for log
    /// pipelines. The level comes from SLUICE_LOG (e.g. `info`,
    /// `sluice_proxy=debug`), else RUST_LOG, default `info`.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, env = "SLUICE_LOG_FORMAT")]
    pub log_format: LogFormat,
    /// This proxy's instance name, reported in `/admin/config/status`: a
    /// watcher's rollout slot is its instance's rank among its peers'.
    /// Default: env POD_NAME, then SLUICE_INSTANCE, then the host name.
    #[arg(long, value_name = "NAME")]
    pub instance: Option<String>,
    /// Start held: read and validate FILE, bind every port and prepare
    /// every virtual cluster as always, but serve no client (each
    /// connection is closed as it comes; status says `held: true`;
    /// /admin/ready answers 503) until a reload applies a version (any
    /// version: a watcher reloads the fleet's last good one), or
    /// `POST /admin/config/release` (the watcher found FILE's version good
    /// to serve), or TIMEOUT passes: then FILE's version serves, with a
    /// warning. With the watcher beside it, a pod started while its fleet
    /// holds a rollout halted never serves the halted version its volume
    /// holds. `--hold` alone waits 60s; `--hold=2m` (the `=` is required).
    #[arg(
        long,
        value_name = "TIMEOUT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "60s",
        value_parser = sluice_process::duration::parse_positive_flag,
        env = "SLUICE_HOLD"
    )]
    pub hold: Option<std::time::Duration>,
    /// When the body of a frame that streams between two plaintext sockets
    /// goes socket to socket by splice(2), never copied through the proxy:
    /// `auto` splices only into a peer on another host (a peer on this host,
    /// over loopback, would pay for the proxy's saved copies with more CPU
    /// of its own: see docs/benchmarks.md), `always` into any, `never` not at
    /// all. `sluice_spliced_bytes_total` counts what took that way.
    #[arg(long, value_enum, default_value_t = Splicing::Auto, env = "SLUICE_SPLICE")]
    pub splice: Splicing,
    /// Threads that serve client connections, each on a runtime of its own
    /// (a connection stays on the thread that served the fewest of its kind,
    /// broker port or bootstrap, when it came; the admin API and reloads run
    /// elsewhere). Default: one per CPU. 0 serves connections on the main
    /// runtime's shared workers instead.
    #[arg(long, value_name = "N", env = "SLUICE_CONNECTION_THREADS")]
    pub connection_threads: Option<usize>,
    /// Where referenced files may lie.
    #[command(flatten)]
    pub roots: FileRootArgs,
}

/// The instance name: `--instance`, else POD_NAME, SLUICE_INSTANCE, the host name.
fn instance(flag: Option<&str>) -> String {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    flag.map(str::to_owned)
        .or_else(|| env("POD_NAME"))
        .or_else(|| env("SLUICE_INSTANCE"))
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .unwrap_or_default()
}

impl RunArgs {
    /// Starts the connection threads (`--connection-threads`).
    pub fn start_connection_threads(&self) -> std::io::Result<()> {
        let threads = self.connection_threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        crate::dataplane::cores::start(threads)
    }

    /// What [`crate::server::run`] needs from the command line.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            config: self.config.clone(),
            persist: self.persist,
            admin_read_timeout: self.admin_read_timeout,
            instance: instance(self.instance.as_deref()),
            file_roots: self.roots.file_roots.clone(),
            hold: self.hold,
        }
    }
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
    /// Where referenced files may lie.
    #[command(flatten)]
    pub roots: FileRootArgs,
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For people.
    Text,
    /// For machines.
    Json,
}

/// Runs `scram-credential`: the password from `input`, the lines to `out`.
pub fn scram_credential(
    args: &ScramArgs,
    input: &mut dyn std::io::BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> ExitCode {
    ExitCode::from(scram::run(args, input, out, err))
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
/// directory and files read beneath `roots` (default: that directory), or,
/// with `paths_only`, without reading referenced files.
fn load(
    path: &Path,
    paths_only: bool,
    roots: &FileRootArgs,
) -> io::Result<Result<ValidConfig, Vec<ConfigProblem>>> {
    let bytes = read_config(path)?;
    Ok(if paths_only {
        config::validate(&bytes, &config::PathsOnly)
    } else {
        let files = LocalFiles::for_config(path, &roots.file_roots)?;
        config::validate(&bytes, &files)
    })
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
