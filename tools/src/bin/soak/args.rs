//! The command line.

use std::path::PathBuf;
use std::time::Duration;

use sluice_config::types::parse_duration;

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    /// How long to keep reloading, at least.
    pub(crate) duration: Duration,
    /// How many reloads to publish, at least.
    pub(crate) reloads: u32,
    /// Where the report, the logs and the PID list go.
    pub(crate) out: PathBuf,
}

/// The `--help` text.
pub(crate) const HELP: &str = "\
soak: tansu, sluice-proxy and sluice-watcher on 127.0.0.1, two virtual
clusters with an idempotent producer and a consumer group each, and reloads
published through the watcher by kubelet-style swaps of a ConfigMap volume
(valid, invalid and conflicting changes) for a bounded time. Writes
OUT/report.json, OUT/proxy.log, OUT/watcher.log; exits 0 when every check
passes, 1 when one fails, 2 on a usage error.

usage: soak [--duration 10m | --minutes N] [--reloads N] [--out DIR]

  --duration D   how long to keep reloading, at least (30s, 10m, 1h: the
                 configuration's duration syntax);
                 default $SOAK_MINUTES minutes, else 10m
  --minutes N    the same, in minutes
  --reloads N    how many reloads, at least (default 200); they are spread
                 evenly over the duration
  --out DIR      default target/soak
";

/// Parses the arguments (without the program name); `Ok(None)` for `--help`.
pub(crate) fn parse(mut it: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let minutes = match std::env::var("SOAK_MINUTES") {
        Ok(m) => m
            .parse::<u64>()
            .map_err(|_| format!("SOAK_MINUTES={m:?} is not a number of minutes"))?,
        Err(_) => 10,
    };
    let mut args = Args {
        duration: Duration::from_secs(minutes * 60),
        reloads: 200,
        out: sluice_testkit::repo().join("target/soak"),
    };
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u32>()
                .map_err(|_| format!("{flag} {value:?}: not a number"))
        };
        match flag.as_str() {
            "--duration" => args.duration = parse_duration(&value)?,
            "--minutes" => args.duration = Duration::from_secs(u64::from(number()?) * 60),
            "--reloads" => args.reloads = number()?,
            "--out" => args.out = PathBuf::from(value),
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    if args.reloads == 0 || args.duration.is_zero() {
        return Err("--reloads and --duration must be more than zero".into());
    }
    Ok(Some(args))
}
