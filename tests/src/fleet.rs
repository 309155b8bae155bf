//! A fleet of three "pods" for the fleet-rollout tests and benchmark: each a
//! network namespace of the caller's own (see `sluice_testkit::netns`) with
//! the same configuration bytes (`listenHost: 0.0.0.0`, the same ports), its
//! own ConfigMap-style volume, its own `sluice-proxy` (started held, as the
//! manifests start it) and `sluice-watcher`; a hub namespace holds the
//! bridge, the broker (tansu) and the driver's requests. Nothing touches the
//! machine's own namespace. Needs root.

use std::path::Path;
use std::time::{Duration, Instant};

use sluice_admin_api::ConfigStatus;
use sluice_testkit::bin;
use sluice_testkit::netns::{HUB, Net};
use sluice_testkit::process::Proc;
use sluice_testkit::volume::Volume;

/// Every proxy's admin port.
pub const ADMIN: u16 = 9190;
/// Every watcher's metrics port (on every address of its pod, so that a
/// Prometheus in the hub can scrape it).
pub const WATCHER: u16 = 9192;
/// The broker's port in the hub.
pub const BROKER: u16 = 9092;
/// Every pod's admin token (the proxy refuses fewer than 32 characters).
const TOKEN: &str = "fleet-test-token-5d41402abc4b2a76b9719d911017c592";

/// Deployment-style pod names: the canary is the first in byte order.
pub const NAMES: [&str; 3] = [
    "sluice-proxy-7c9d8f6b5-b8kqz",
    "sluice-proxy-7c9d8f6b5-m2x9p",
    "sluice-proxy-7c9d8f6b5-x2kfp",
];

/// The configuration every pod gets: one cluster in front of `upstream`;
/// `marker` makes each version distinct.
pub fn config(upstream: &str, marker: u32) -> String {
    format!(
        "# version {marker}\nadmin: {{ listen: 0.0.0.0:{ADMIN}, tokenFile: token }}\ndrainTimeout: 2s\nvirtualClusters:\n  - name: orders\n    upstream: {{ bootstrapServers: [\"{upstream}\"], checkTimeout: 3s }}\n    gateway: {{ listenHost: 0.0.0.0, advertisedHost: 127.0.0.1, bootstrapPort: 19092, brokerPorts: {{ start: 19093, count: 1, firstNodeId: 111 }} }}\n"
    )
}

/// Like [`config`], the cluster serving TLS with the pair in each pod's
/// Secret-style volume `secret/` beside the configuration (the same bytes on
/// every pod: the paths are relative).
pub fn config_tls(upstream: &str, marker: u32) -> String {
    config(upstream, marker).replace(
        "firstNodeId: 111 }",
        "firstNodeId: 111 }, tls: { certFile: secret/tls.crt, keyFile: secret/tls.key }",
    )
}

/// The broker's address.
pub fn broker() -> String {
    format!("{HUB}:{BROKER}")
}

/// One pod.
#[derive(Debug)]
pub struct Pod {
    /// Its namespace.
    pub ns: String,
    /// Its address.
    pub addr: std::net::Ipv4Addr,
    /// Its configuration volume.
    pub volume: Volume,
    /// Its proxy.
    pub proxy: Proc,
    /// Its watcher (`None` once killed).
    pub watcher: Option<Proc>,
    /// Its Secret-style volume (`secret/` beside the configuration), if any.
    pub secret: Option<Volume>,
    /// Its instance name.
    pub name: &'static str,
    _dir: tempfile::TempDir,
}

/// The pods, the broker and the namespaces.
#[derive(Debug)]
pub struct Fleet {
    /// The pods, canary first.
    pub pods: Vec<Pod>,
    _broker: Proc,
    /// The namespaces.
    pub net: Net,
    /// Every watcher's arguments besides its own paths.
    watcher_args: Vec<String>,
}

impl Fleet {
    /// Starts the broker and every pod; the watchers know their peers and
    /// get `watcher_flags` too.
    pub fn start(watcher_flags: &[&str]) -> Fleet {
        Self::start_with(true, watcher_flags)
    }

    /// Like [`Fleet::start`]; without `peers`, each watcher on its own (the
    /// gate off: the per-slot delay only).
    pub fn start_with(peers: bool, watcher_flags: &[&str]) -> Fleet {
        Self::launch(peers, watcher_flags, &config(&broker(), 0), None)
    }

    /// Like [`Fleet::start`], each pod serving TLS ([`config_tls`]) with the
    /// `tls.crt` and `tls.key` of `secret` in its own Secret-style volume.
    pub fn start_tls(watcher_flags: &[&str], secret: &[(&str, &[u8])]) -> Fleet {
        Self::launch(true, watcher_flags, &config_tls(&broker(), 0), Some(secret))
    }

    fn launch(
        peers: bool,
        watcher_flags: &[&str],
        initial: &str,
        secret: Option<&[(&str, &[u8])]>,
    ) -> Fleet {
        let net = Net::new(NAMES.len());
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
        let peer_urls = (0..NAMES.len())
            .map(|i| format!("http://{}:{ADMIN}", Net::pod_addr(i)))
            .collect::<Vec<_>>()
            .join(",");
        let mut watcher_args: Vec<String> = Vec::new();
        if peers {
            watcher_args.extend(["--peers".to_owned(), peer_urls]);
        }
        watcher_args.extend(watcher_flags.iter().map(|f| (*f).to_owned()));
        let mut pods = Vec::new();
        for (i, name) in NAMES.iter().enumerate() {
            let ns = net.pod(i);
            let dir = tempfile::tempdir().expect("temp dir");
            std::fs::write(dir.path().join("token"), TOKEN).expect("token");
            let volume_dir = dir.path().join("config");
            std::fs::create_dir(&volume_dir).expect("volume dir");
            let volume = Volume::create(&volume_dir, "proxy.yaml", initial.as_bytes());
            // The token sits beside the volume, referenced relative to it.
            std::fs::write(volume_dir.join("token"), TOKEN).expect("token");
            let secret = secret.map(|files| {
                let dir = volume_dir.join("secret");
                std::fs::create_dir(&dir).expect("secret dir");
                Volume::create_files(&dir, files)
            });
            let mut proxy = spawn_proxy(&net, &ns, &volume.path(), name);
            let watcher = spawn_watcher(&net, &ns, i, &volume.path(), &watcher_args);
            // Held until its watcher decides (the first pod: alone).
            proxy.wait_for_line("data plane released", Duration::from_secs(30));
            pods.push(Pod {
                ns,
                addr: Net::pod_addr(i),
                volume,
                proxy,
                watcher: Some(watcher),
                secret,
                name,
                _dir: dir,
            });
        }
        Fleet {
            pods,
            _broker: broker_proc,
            net,
            watcher_args,
        }
    }

    /// Kills pod `i`'s watcher and proxy (SIGKILL: an OOM kill, a lost node).
    pub fn kill(&mut self, i: usize) {
        self.pods[i].watcher = None;
        self.pods[i].proxy.stop("KILL", Duration::from_secs(5));
    }

    /// Starts pod `i`'s proxy again on its volume, held (`--hold`), without
    /// its watcher; returns once its admin API answers.
    pub fn start_proxy(&mut self, i: usize) {
        let pod = &self.pods[i];
        self.pods[i].proxy = spawn_proxy(&self.net, &pod.ns, &pod.volume.path(), pod.name);
    }

    /// Starts pod `i`'s watcher again; returns once it watches its volume
    /// (its proxy held still, or released already: see its log).
    pub fn start_watcher(&mut self, i: usize) {
        let pod = &self.pods[i];
        let watcher = spawn_watcher(
            &self.net,
            &pod.ns,
            i,
            &pod.volume.path(),
            &self.watcher_args,
        );
        self.pods[i].watcher = Some(watcher);
    }

    /// Pod `i`'s watcher, running.
    pub fn watcher(&mut self, i: usize) -> &mut Proc {
        self.pods[i].watcher.as_mut().expect("a running watcher")
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
        text.lines().find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
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

/// A pod's proxy on `config`, started held as the manifests start it;
/// returns once its admin API is up.
fn spawn_proxy(net: &Net, ns: &str, config: &Path, name: &str) -> Proc {
    let mut cmd = net.command(ns, bin("sluice-proxy"));
    cmd.arg("run").arg("--config").arg(config);
    cmd.args(["--log-format", "json", "--instance", name, "--hold"]);
    let mut proxy = Proc::spawn(name, cmd);
    proxy.wait_for_line("sluice-proxy ready", Duration::from_secs(30));
    proxy
}

/// Pod `i`'s watcher of `config` with `args`; returns once it watches.
fn spawn_watcher(net: &Net, ns: &str, i: usize, config: &Path, args: &[String]) -> Proc {
    let token = config
        .parent()
        .expect("the volume's directory")
        .join("token");
    let mut cmd = net.command(ns, bin("sluice-watcher"));
    cmd.arg("--path").arg(config);
    cmd.arg("--token-file").arg(token);
    cmd.args([
        "--proxy",
        &format!("http://127.0.0.1:{ADMIN}"),
        "--metrics-listen",
        &format!("0.0.0.0:{WATCHER}"),
        "--log-format",
        "json",
    ]);
    cmd.args(args);
    cmd.env_remove("POD_NAME");
    let mut watcher = Proc::spawn(&format!("watcher-{i}"), cmd);
    watcher.wait_for_line("watching configuration", Duration::from_secs(20));
    watcher
}
