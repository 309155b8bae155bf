//! A fleet of "pods" for the fleet-rollout tests and benchmark (three
//! unless asked otherwise): each a network namespace of the caller's own
//! (see `sluice_testkit::netns`) with the same configuration bytes
//! (`listenHost: 0.0.0.0`, the same ports), its own ConfigMap-style volume,
//! its own `sluice-proxy` (started held, as the manifests start it) and
//! `sluice-watcher`; a hub namespace holds the
//! bridge, the broker (tansu) and the driver's requests. Nothing touches
//! the machine's own namespace. Needs root.
//!
//! - [`config`]: the configuration every pod gets, and what tests change in it
//! - [`pod`]: one pod, killed, replaced under another name, its watcher restarted

use std::time::{Duration, Instant};

use sluice_admin_api::ConfigStatus;
use sluice_testkit::netns::Net;
use sluice_testkit::process::Proc;

mod config;
mod pod;

pub use config::{Cluster, broker, config, config_tls, config_with};
pub use pod::Pod;
use pod::WatcherArgs;

/// Every proxy's admin port.
pub const ADMIN: u16 = 9190;
/// Every watcher's metrics port (on every address of its pod, so that a
/// Prometheus in the hub can scrape it).
pub const WATCHER: u16 = 9192;
/// The broker's port in the hub.
pub const BROKER: u16 = 9092;
/// Every pod's admin token (the proxy refuses fewer than 32 characters).
const TOKEN: &str = "fleet-test-token-5d41402abc4b2a76b9719d911017c592";

/// Deployment-style pod names of a three-pod fleet: the canary is the
/// first in byte order.
pub const NAMES: [&str; 3] = [
    "sluice-proxy-7c9d8f6b5-b8kqz",
    "sluice-proxy-7c9d8f6b5-m2x9p",
    "sluice-proxy-7c9d8f6b5-x2kfp",
];

/// Pod `i`'s name: [`NAMES`] for the first three, then names that sort
/// after them in the order of `i`.
pub fn name(i: usize) -> String {
    NAMES.get(i).map_or_else(
        || format!("sluice-proxy-7c9d8f6b5-z{i:04}"),
        |n| (*n).to_owned(),
    )
}

/// What to start.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    /// How many pods.
    pub pods: usize,
    /// Whether the watchers know their peers (the gate on).
    pub peers: bool,
    /// Every watcher's further flags.
    pub flags: &'a [&'a str],
    /// The configuration every pod starts with.
    pub initial: String,
    /// Files of each pod's Secret-style volume `secret/`, if any.
    pub secret: Option<&'a [(&'a str, &'a [u8])]>,
}

impl<'a> Spec<'a> {
    /// Three pods whose watchers know each other and get `flags`, starting
    /// with [`config`]'s version 0.
    pub fn new(flags: &'a [&'a str]) -> Spec<'a> {
        Spec {
            pods: NAMES.len(),
            peers: true,
            flags,
            initial: config(&broker(), 0),
            secret: None,
        }
    }
}

/// The pods, the broker and the namespaces.
#[derive(Debug)]
pub struct Fleet {
    /// The pods, canary first.
    pub pods: Vec<Pod>,
    _broker: Proc,
    /// The namespaces.
    pub net: Net,
    watcher: WatcherArgs,
}

impl Fleet {
    /// Starts the broker and every pod; the watchers know their peers and
    /// get `watcher_flags` too.
    pub fn start(watcher_flags: &[&str]) -> Fleet {
        Self::launch(Spec::new(watcher_flags))
    }

    /// Like [`Fleet::start`]; without `peers`, each watcher on its own (the
    /// gate off: the per-slot delay only).
    pub fn start_with(peers: bool, watcher_flags: &[&str]) -> Fleet {
        Self::launch(Spec {
            peers,
            ..Spec::new(watcher_flags)
        })
    }

    /// Like [`Fleet::start`], each pod serving TLS ([`config_tls`]) with the
    /// `tls.crt` and `tls.key` of `secret` in its own Secret-style volume.
    pub fn start_tls(watcher_flags: &[&str], secret: &[(&str, &[u8])]) -> Fleet {
        Self::launch(Spec {
            initial: config_tls(&broker(), 0),
            secret: Some(secret),
            ..Spec::new(watcher_flags)
        })
    }

    /// Starts the broker (with the topic `fleet`) and the pods `spec` asks for.
    pub fn launch(spec: Spec<'_>) -> Fleet {
        let net = Net::new(spec.pods);
        let broker_proc = start_broker(&net);
        let peers = spec.peers.then(|| {
            (0..spec.pods)
                .map(|i| format!("http://{}:{ADMIN}", Net::pod_addr(i)))
                .collect::<Vec<_>>()
                .join(",")
        });
        let watcher = WatcherArgs {
            peers,
            flags: spec.flags.iter().map(|f| (*f).to_owned()).collect(),
        };
        let pods = (0..spec.pods)
            .map(|i| Pod::start(&net, i, &name(i), &spec.initial, spec.secret, &watcher))
            .collect();
        Fleet {
            pods,
            _broker: broker_proc,
            net,
            watcher,
        }
    }

    /// Kills pod `i` (its proxy and its watcher) and starts a pod named
    /// `name` in its place, as a Deployment replaces a pod: same address and
    /// volume, a new instance name (so the slots may change).
    pub fn replace(&mut self, i: usize, name: &str) {
        self.pods[i].replace(&self.net, i, name, &self.watcher);
    }

    /// Kills pod `i`'s watcher and proxy (SIGKILL: an OOM kill, a lost node).
    pub fn kill(&mut self, i: usize) {
        self.pods[i].kill();
    }

    /// Starts pod `i`'s proxy again on its volume, held (`--hold`), without
    /// its watcher; returns once its admin API answers.
    pub fn start_proxy(&mut self, i: usize) {
        self.pods[i].start_proxy(&self.net);
    }

    /// Starts pod `i`'s watcher again; returns once it watches its volume
    /// (its proxy held still, or released already: see its log).
    pub fn start_watcher(&mut self, i: usize) {
        self.restart_watcher(i);
    }

    /// Pod `i`'s watcher, running.
    pub fn watcher(&mut self, i: usize) -> &mut Proc {
        self.pods[i].watcher.as_mut().expect("a running watcher")
    }

    /// Kills pod `i`'s watcher and starts a new one.
    pub fn restart_watcher(&mut self, i: usize) {
        self.pods[i].restart_watcher(&self.net, i, &self.watcher);
    }

    /// Pod `i`'s proxy status, read from the hub.
    pub fn status(&self, i: usize) -> Option<ConfigStatus> {
        let url = format!("http://{}:{ADMIN}/admin/config/status", self.pods[i].addr);
        let body = self
            .net
            .get(&self.net.hub(), &url, Duration::from_secs(2))?;
        serde_json::from_str(&body).ok()
    }

    /// Pod `i`'s watcher metric (inside its namespace, on loopback).
    pub fn watcher_metric(&self, i: usize, series: &str) -> Option<f64> {
        let url = format!("http://127.0.0.1:{WATCHER}/metrics");
        let text = self
            .net
            .get(&self.pods[i].ns, &url, Duration::from_secs(2))?;
        sample(&text, series)
    }

    /// Pod `i`'s proxy metric (its admin API's `/metrics`, read from the hub).
    pub fn proxy_metric(&self, i: usize, series: &str) -> Option<f64> {
        let url = format!("http://{}:{ADMIN}/metrics", self.pods[i].addr);
        let text = self
            .net
            .get(&self.net.hub(), &url, Duration::from_secs(2))?;
        sample(&text, series)
    }

    /// Publishes `config` on every pod's volume, one right after the other;
    /// returns its version.
    pub fn swap_all(&mut self, config: &str) -> String {
        for pod in &mut self.pods {
            pod.volume.swap(config.as_bytes());
        }
        sluice_testkit::config::version(config)
    }

    /// Publishes `files` on every pod's Secret-style volume, one right after
    /// the other.
    pub fn swap_secret_all(&mut self, files: &[(&str, &[u8])]) {
        for pod in &mut self.pods {
            pod.secret
                .as_mut()
                .expect("a fleet started with a secret")
                .swap_files(files);
        }
    }

    /// Waits (at most `timeout`, polling every 100 ms) until `done`.
    pub fn wait(&self, what: &str, timeout: Duration, mut done: impl FnMut(&Fleet) -> bool) {
        let deadline = Instant::now() + timeout;
        while !done(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Asserts that every pod but the canary got neither a validate nor a
    /// reload since `before` (their statuses then), and runs what it ran.
    pub fn assert_only_the_canary_was_asked(&self, before: &[ConfigStatus]) {
        for (i, was) in before.iter().enumerate().skip(1) {
            let s = self.status(i).expect("status");
            assert_eq!(
                s.last_validation_attempt, was.last_validation_attempt,
                "pod {i} got no validate"
            );
            assert_eq!(
                s.last_reload_attempt, was.last_reload_attempt,
                "pod {i} got no reload"
            );
            assert_eq!(s.effective_version, was.effective_version, "pod {i}");
        }
    }

    /// Whether pod `i` runs `version`.
    pub fn runs(&self, i: usize, version: &str) -> bool {
        self.status(i)
            .is_some_and(|s| s.current_config_version.as_str() == version)
    }
}

/// The value of `series` in a `/metrics` text.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// Starts tansu in the hub and creates the topic `fleet`.
fn start_broker(net: &Net) -> Proc {
    let hub = net.hub();
    let listen = format!("tcp://{}", broker());
    let mut cmd = net.command(&hub, "tansu");
    cmd.args([
        "broker",
        "--listener-url",
        &listen,
        "--advertised-listener-url",
        &listen,
    ]);
    cmd.args(["--storage-engine", "memory://tansu/"]);
    let mut broker_proc = Proc::spawn("tansu", cmd);
    broker_proc.wait_for_line("ready in", Duration::from_secs(30));
    let out = net
        .command(&hub, "tansu")
        .args([
            "topic",
            "create",
            "fleet",
            "--broker",
            &listen,
            "--partitions",
            "1",
        ])
        .output()
        .expect("create topic");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    broker_proc
}

/// `(start, end)` of a proxy's last reload, from its own status (ms since
/// the epoch, parsed from RFC 3339).
pub fn window(s: &ConfigStatus) -> (u128, u128) {
    let a = s.last_reload_attempt.as_ref().expect("a reload attempt");
    let start = humantime::parse_rfc3339(&a.timestamp)
        .expect("RFC 3339")
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis();
    (start, start + u128::from(a.duration_ms))
}
