//! The command line. Every flag also reads an environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

/// Watches a proxy configuration (a ConfigMap volume or a plain file) and,
/// when it changes, waits this pod's turn, asks the proxy to validate it and
/// then to reload it, retrying with backoff. Content the proxy rejects is
/// never sent again; the next change is.
#[derive(Debug, Parser)]
#[command(name = "sluice-watcher", version, about, max_term_width = 100)]
pub struct Args {
    /// The configuration file: inside a ConfigMap volume mounted as a
    /// directory (never subPath), or a plain file.
    #[arg(long, value_name = "FILE", env = "SLUICE_PATH")]
    pub path: PathBuf,
    /// The proxy's admin API.
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:9190",
        env = "SLUICE_PROXY"
    )]
    pub proxy: String,
    /// Delay per slot: slot N waits N × stagger before applying.
    #[arg(long, default_value = "10s", value_parser = duration, env = "SLUICE_STAGGER")]
    pub stagger: Duration,
    /// A random extra delay, uniform in [0, jitter).
    #[arg(long, default_value = "2s", value_parser = duration, env = "SLUICE_JITTER")]
    pub jitter: Duration,
    /// This pod's slot. Default: the StatefulSet ordinal at the end of
    /// POD_NAME, else a stable hash of POD_NAME (or the host name) modulo --slots.
    #[arg(long, env = "SLUICE_SLOT")]
    pub slot: Option<u64>,
    /// How many slots hashed pod names spread over (set it to the replica count).
    #[arg(long, default_value_t = 1, env = "SLUICE_SLOTS")]
    pub slots: u64,
    /// Poll the file instead of using inotify (NFS and other filesystems
    /// without inotify; the watcher also falls back to it when inotify fails).
    #[arg(long, env = "SLUICE_POLL")]
    pub poll: bool,
    /// How often polling reads the file.
    #[arg(long, default_value = "1s", value_parser = duration, env = "SLUICE_POLL_INTERVAL")]
    pub poll_interval: Duration,
    /// Quiet time after the last file event before the file is read: a burst
    /// of events (an editor's save, several swaps) becomes one read.
    #[arg(long, default_value = "10ms", value_parser = duration, env = "SLUICE_DEBOUNCE")]
    pub debounce: Duration,
    /// How often the file is re-read and the proxy reconciled with it even
    /// without events (inotify can drop events).
    #[arg(long, default_value = "60s", value_parser = duration, env = "SLUICE_RESYNC")]
    pub resync: Duration,
    /// How long one content is retried (proxy down, 409, 5xx) before giving
    /// up until the next change or resync.
    #[arg(long, default_value = "5m", value_parser = duration, env = "SLUICE_RETRY_DEADLINE")]
    pub retry_deadline: Duration,
    /// A file holding the proxy's admin bearer token.
    #[arg(long, value_name = "FILE", env = "SLUICE_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// Record a Kubernetes Event on this pod for each applied, rejected or
    /// failed version (needs POD_NAME and POD_NAMESPACE from the Downward API
    /// and RBAC to create Events).
    #[arg(long, env = "SLUICE_EVENTS")]
    pub events: bool,
    /// Where /healthz and /metrics are served.
    #[arg(long, default_value = "127.0.0.1:9192", env = "SLUICE_METRICS_LISTEN")]
    pub metrics_listen: SocketAddr,
    /// Log format.
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

/// Parses `0`, `500ms`, `10s`, `2m`, `1h`.
pub fn duration(s: &str) -> Result<Duration, String> {
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or("add a unit: ms, s, m or h")?;
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().map_err(|_| format!("{s:?} is not a duration"))?;
    let ms = match unit {
        "ms" => n,
        "s" => n * 1000,
        "m" => n * 60_000,
        "h" => n * 3_600_000,
        _ => return Err(format!("{s:?}: unit must be ms, s, m or h")),
    };
    Ok(Duration::from_millis(ms))
}
