//! The command line. Every flag also reads an environment variable.
//! Durations are written as in the proxy's configuration (`500ms`, `10s`,
//! `5m`, `1h`; at most 24h), with one parser, `sluice_process::duration`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use sluice_process::LogFormat;
use sluice_process::duration::{parse_flag as duration, parse_positive_flag as positive};

use crate::app::Options;
use crate::fleet::gate;
use crate::fleet::peers::PeerSource;
use crate::fleet::rollout::FleetSettings;
use crate::schedule;
use crate::volume::WatchOptions;

/// Watches a proxy configuration (a ConfigMap volume or a plain file) and,
/// when it changes, waits this pod's turn, asks the proxy to validate it and
/// then to reload it, retrying with backoff. Content the proxy rejects is
/// never sent again; the next change is.
///
/// With peers (`--peers` or `--peers-dns`), pods roll a version out in
/// order: the canary (slot 0) first, the others once every lower slot runs
/// it, the canary has run it for `--canary-soak` and its client-side
/// analysis of it is over; any pod's failure (a regression its proxy found
/// among them) halts the rollout everywhere. `sluice-watcher fleet` shows
/// every pod's state.
#[derive(Debug, Parser)]
#[command(
    name = "sluice-watcher",
    version,
    about,
    max_term_width = 100,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Args {
    /// `fleet`: print every pod's rollout state and exit.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The configuration file: inside a ConfigMap volume mounted as a
    /// directory (never subPath), or a plain file.
    #[arg(long, value_name = "FILE", env = "SLUICE_PATH", required = true)]
    pub path: Option<PathBuf>,
    /// The proxy's admin API.
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:9190",
        env = "SLUICE_PROXY"
    )]
    pub proxy: String,
    /// A PEM file with the CA certificate(s) that sign the admin API's
    /// certificate (the proxy's `admin.tls`), for an `https://` --proxy
    /// and the peers: then only these CAs are trusted (without it, the
    /// platform's). With it, or an `https://` --proxy, peers found by
    /// --peers-dns are asked over HTTPS too.
    #[arg(long, value_name = "FILE", env = "SLUICE_PROXY_CA")]
    pub proxy_ca: Option<PathBuf>,
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
    #[arg(long, default_value = "1s", value_parser = positive, env = "SLUICE_POLL_INTERVAL")]
    pub poll_interval: Duration,
    /// Quiet time after the last file event before the file is read: a burst
    /// of events (an editor's save, several swaps) becomes one read.
    #[arg(long, default_value = "10ms", value_parser = duration, env = "SLUICE_DEBOUNCE")]
    pub debounce: Duration,
    /// How often the file is re-read and the proxy reconciled with it even
    /// without events (inotify can drop events).
    #[arg(long, default_value = "60s", value_parser = positive, env = "SLUICE_RESYNC")]
    pub resync: Duration,
    /// How long one content is retried (proxy down, 409, 5xx) before giving
    /// up until the next change or resync.
    #[arg(long, default_value = "5m", value_parser = duration, env = "SLUICE_RETRY_DEADLINE")]
    pub retry_deadline: Duration,
    /// A file holding the proxy's admin bearer token, sent with validate
    /// and reload (never with a status read), and read again after a 401.
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
    /// The peers, for the fleet rollout.
    #[command(flatten)]
    pub peers: PeerArgs,
    /// How long the canary must run a new version, ready and without a newly
    /// failed cluster, before the next pods apply it (with peers). 0 is
    /// allowed. The next pods also wait while the canary's client-side
    /// analysis of the version runs: keep it at least the proxies' analysis
    /// window (30s by default).
    #[arg(long, default_value = "30s", value_parser = duration, env = "SLUICE_CANARY_SOAK")]
    pub canary_soak: Duration,
    /// A peer silent this long is left out of the rollout gate (a pod that is
    /// down cannot be harmed and must not stop the fleet). Above 0.
    #[arg(long, default_value = "30s", value_parser = positive, env = "SLUICE_PEER_TIMEOUT")]
    pub peer_timeout: Duration,
    /// How often the peers are asked for their status while waiting at the gate.
    #[arg(long, default_value = "1s", value_parser = positive, env = "SLUICE_PEER_POLL")]
    pub peer_poll: Duration,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, env = "SLUICE_LOG_FORMAT")]
    pub log_format: LogFormat,
}

/// Where the peers are: every pod's admin API.
#[derive(Debug, Clone, clap::Args)]
#[group(multiple = false)]
pub struct PeerArgs {
    /// Every pod's admin API (bare metal, tests; this pod's --proxy is
    /// always one of them):
    /// `http://10.0.0.1:9190,http://10.0.0.2:9190`. Turns on the fleet rollout.
    #[arg(
        long,
        value_name = "URL,...",
        value_delimiter = ',',
        env = "SLUICE_PEERS"
    )]
    pub peers: Vec<String>,
    /// A name that resolves to every pod's address (a headless Service with
    /// `publishNotReadyAddresses: true`), and the admin port:
    /// `sluice-proxy-peers.kafka-proxy.svc:9190`. Turns on the fleet rollout.
    #[arg(long, value_name = "NAME:PORT", env = "SLUICE_PEERS_DNS")]
    pub peers_dns: Option<PeerSource>,
}

impl PeerArgs {
    /// The peers given, if any.
    pub fn source(&self) -> Option<PeerSource> {
        if let Some(dns) = &self.peers_dns {
            return Some(dns.clone());
        }
        let urls: Vec<String> = self
            .peers
            .iter()
            .map(|u| u.trim().trim_end_matches('/').to_owned())
            .filter(|u| !u.is_empty())
            .collect();
        (!urls.is_empty()).then_some(PeerSource::Urls(urls))
    }
}

/// Subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print one line per pod: slot, instance, version in force, last
    /// attempt, ready, the client-side analysis' verdict, and what failed
    /// (with a regression's first finding); and whether a rollout is halted.
    /// Exit status 0, or 1 when a rollout is halted.
    Fleet(FleetArgs),
}

/// `sluice-watcher fleet`.
#[derive(Debug, clap::Args)]
pub struct FleetArgs {
    /// The peers.
    #[command(flatten)]
    pub peers: PeerArgs,
    /// A PEM file with the CA certificate(s) that sign the peers' admin
    /// API certificates (`admin.tls`); with it, --peers-dns peers are asked
    /// over HTTPS.
    #[arg(long, value_name = "FILE", env = "SLUICE_PROXY_CA")]
    pub proxy_ca: Option<PathBuf>,
    /// How long each pod may take to answer.
    #[arg(long, default_value = "3s", value_parser = positive)]
    pub timeout: Duration,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// How `fleet` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table.
    Text,
    /// JSON.
    Json,
}

impl Args {
    /// What [`crate::app::Watcher::start`] needs. The slot comes from
    /// `--slot`, else `POD_NAME` (or the host name), read here.
    pub fn options(&self) -> Options {
        let pod = std::env::var("POD_NAME").ok().or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        });
        let fleet = self.peers.source().map(|source| FleetSettings {
            source,
            gate: gate::Settings {
                canary_soak: self.canary_soak,
                peer_timeout: self.peer_timeout,
            },
            poll: self.peer_poll,
            call_timeout: self
                .peer_poll
                .clamp(Duration::from_millis(500), Duration::from_secs(5)),
            token: None,
            slot_override: self.slot,
            // Set by `Watcher::start`, which reads --proxy-ca.
            tls: Default::default(),
        });
        Options {
            path: self.path.clone().unwrap_or_default(),
            fleet,
            proxy: self.proxy.clone(),
            proxy_ca: self.proxy_ca.clone(),
            token_file: self.token_file.clone(),
            watch: WatchOptions {
                poll: self.poll,
                poll_interval: self.poll_interval,
                resync: self.resync,
                debounce: self.debounce,
            },
            slot: schedule::slot(self.slot, pod.as_deref(), self.slots),
            stagger: self.stagger,
            jitter: self.jitter,
            retry_deadline: self.retry_deadline,
            events: self.events,
            metrics_listen: self.metrics_listen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(["sluice-watcher", "--path", "p"].iter().chain(extra))
    }

    #[test]
    fn durations_use_the_shared_parser() {
        let args =
            parse(&["--stagger", "0", "--jitter", "0s", "--retry-deadline", "2m"]).expect("parses");
        assert_eq!(args.stagger, Duration::ZERO);
        assert_eq!(args.jitter, Duration::ZERO);
        assert_eq!(args.retry_deadline, Duration::from_secs(120));
        assert_eq!(args.debounce, Duration::from_millis(10));
        assert_eq!(args.resync, Duration::from_secs(60));
    }

    #[test]
    fn peers_come_from_a_list_or_a_name_never_both() {
        let args = parse(&["--peers", "http://a:9190/,http://b:9190"]).expect("parses");
        assert_eq!(
            args.peers.source(),
            Some(PeerSource::Urls(vec![
                "http://a:9190".into(),
                "http://b:9190".into()
            ]))
        );
        let args = parse(&["--peers-dns", "peers.ns.svc:9190"]).expect("parses");
        assert_eq!(
            args.peers.source(),
            Some(PeerSource::Dns {
                name: "peers.ns.svc".into(),
                port: 9190
            })
        );
        assert!(parse(&["--peers", "http://a:1", "--peers-dns", "p:1"]).is_err());
        assert!(parse(&["--peers-dns", "no-port"]).is_err());
        assert!(parse(&[]).expect("parses").options().fleet.is_none());
        let e = parse(&["--peer-timeout", "0s"]).expect_err("zero");
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        let args = parse(&["--canary-soak", "0s", "--peers", "http://a:1"]).expect("a soak of 0");
        assert_eq!(
            args.options().fleet.map(|f| f.gate.canary_soak),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn fleet_needs_no_path() {
        let args = Args::try_parse_from(["sluice-watcher", "fleet", "--peers", "http://a:1"])
            .expect("parses");
        assert!(matches!(args.command, Some(Command::Fleet(_))));
        assert!(
            Args::try_parse_from(["sluice-watcher"]).is_err(),
            "--path is required"
        );
    }

    #[test]
    fn huge_or_malformed_durations_are_usage_errors() {
        for bad in [
            ["--stagger", "99999999999h"],
            ["--stagger", "99999999999999999999h"],
            ["--jitter", "25h"],
            ["--stagger", "1.5s"],
            ["--resync", "0s"],
            ["--poll-interval", "0"],
        ] {
            let e = parse(&bad).expect_err(bad[1]);
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad:?}");
            assert_eq!(e.exit_code(), 2);
        }
    }
}
