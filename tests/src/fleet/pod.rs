//! One pod of a fleet: its namespace and address, its ConfigMap-style
//! volume, its proxy and its watcher; started, killed, replaced by a pod of
//! another name, or its watcher restarted, the way a Deployment's pods come
//! and go.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sluice_testkit::bin;
use sluice_testkit::netns::Net;
use sluice_testkit::process::Proc;
use sluice_testkit::volume::Volume;

use super::{ADMIN, TOKEN, WATCHER};

/// One pod.
#[derive(Debug)]
pub struct Pod {
    /// Its instance name (the pod name its proxy reports).
    pub name: String,
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
    pub(super) dir: tempfile::TempDir,
}

/// How every watcher of a fleet runs: its peers (`None`: on its own) and
/// its flags.
#[derive(Debug, Clone)]
pub(super) struct WatcherArgs {
    pub(super) peers: Option<String>,
    pub(super) flags: Vec<String>,
}

impl Pod {
    /// Makes pod `i`'s volume with `initial` (and the Secret-style volume
    /// with `secret`), then starts its proxy and watcher.
    pub(super) fn start(
        net: &Net,
        i: usize,
        name: &str,
        initial: &str,
        secret: Option<&[(&str, &[u8])]>,
        watcher: &WatcherArgs,
    ) -> Pod {
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
        let ns = net.pod(i);
        let mut proxy = start_proxy(net, &ns, name, &volume.path());
        let watcher = start_watcher(net, &ns, i, &volume.path(), &volume_dir, watcher);
        // Held until its watcher decides (the first pod: alone).
        proxy.wait_for_line("data plane released", Duration::from_secs(30));
        Pod {
            name: name.to_owned(),
            ns,
            addr: Net::pod_addr(i),
            volume,
            proxy,
            watcher: Some(watcher),
            secret,
            dir,
        }
    }

    /// Kills its watcher and its proxy (SIGKILL), the way a node dies.
    pub fn kill(&mut self) {
        if let Some(mut w) = self.watcher.take() {
            kill(&mut w);
        }
        kill(&mut self.proxy);
    }

    /// Kills it and starts a pod named `name` in its place: the same
    /// namespace, address and volume (which holds whatever was published
    /// last), a new proxy and a new watcher.
    pub(super) fn replace(&mut self, net: &Net, i: usize, name: &str, watcher: &WatcherArgs) {
        self.kill();
        self.name = name.to_owned();
        self.proxy = start_proxy(net, &self.ns, name, &self.volume.path());
        self.restart_watcher(net, i, watcher);
    }

    /// Starts its proxy again on its volume, held (`--hold`), without a
    /// watcher (kill it first); returns once its admin API answers.
    pub(super) fn start_proxy(&mut self, net: &Net) {
        self.proxy = start_proxy(net, &self.ns, &self.name, &self.volume.path());
    }

    /// Kills its watcher, if it runs, and starts a new one.
    pub(super) fn restart_watcher(&mut self, net: &Net, i: usize, watcher: &WatcherArgs) {
        if let Some(mut w) = self.watcher.take() {
            kill(&mut w);
        }
        let volume_dir = self.volume_dir();
        self.watcher = Some(start_watcher(
            net,
            &self.ns,
            i,
            &self.volume.path(),
            &volume_dir,
            watcher,
        ));
    }

    fn volume_dir(&self) -> PathBuf {
        self.dir.path().join("config")
    }
}

/// SIGKILL, unless it exited already.
fn kill(p: &mut Proc) {
    if p.wait_exit(Duration::ZERO).is_none() {
        p.stop("KILL", Duration::from_secs(5));
    }
}

/// A pod's proxy on `config`, started held as the manifests start it;
/// returns once its admin API is up.
fn start_proxy(net: &Net, ns: &str, name: &str, config: &Path) -> Proc {
    let mut cmd = net.command(ns, bin("sluice-proxy"));
    cmd.arg("run").arg("--config").arg(config);
    cmd.args(["--log-format", "json", "--instance", name, "--hold"]);
    let mut proxy = Proc::spawn(name, cmd);
    proxy.wait_for_line("sluice-proxy ready", Duration::from_secs(30));
    proxy
}

fn start_watcher(
    net: &Net,
    ns: &str,
    i: usize,
    config: &Path,
    volume_dir: &Path,
    args: &WatcherArgs,
) -> Proc {
    let mut cmd = net.command(ns, bin("sluice-watcher"));
    cmd.arg("--path").arg(config);
    cmd.arg("--token-file").arg(volume_dir.join("token"));
    cmd.args([
        "--proxy",
        &format!("http://127.0.0.1:{ADMIN}"),
        "--metrics-listen",
        &format!("0.0.0.0:{WATCHER}"),
        "--log-format",
        "json",
    ]);
    if let Some(peers) = &args.peers {
        cmd.args(["--peers", peers]);
    }
    cmd.args(&args.flags);
    cmd.env_remove("POD_NAME");
    let mut watcher = Proc::spawn(&format!("watcher-{i}"), cmd);
    watcher.wait_for_line("watching configuration", Duration::from_secs(20));
    watcher
}
