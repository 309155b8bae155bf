//! The proxy + volume + watcher fixture: a proxy whose configuration lives
//! in a kubelet-style ConfigMap volume, and a watcher between the two. The
//! configurations are [`config::watched`]: one cluster, no broker behind it
//! (reloads need none), numbered so that each is distinct.

use crate::config;
use crate::ports::ports;
use crate::proxy::Proxy;
use crate::volume::Volume;
use crate::watcher::Watcher;

/// Watcher flags that make it react at once: no stagger, no jitter.
pub const AT_ONCE: [&str; 4] = ["--stagger", "0s", "--jitter", "0s"];

/// A running proxy, its volume and a watcher.
#[derive(Debug)]
pub struct Rig {
    /// The proxy, started on configuration 0.
    pub proxy: Proxy,
    /// The volume the watcher watches, holding configuration 0 at first.
    pub volume: Volume,
    /// The watcher.
    pub watcher: Watcher,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// Starts the proxy on configuration 0, writes it to a volume, and
    /// starts a watcher on the volume with `watcher_args`.
    pub fn start(watcher_args: &[&str]) -> Rig {
        let port = ports(2);
        let proxy = Proxy::start(&config::watched("{admin}", port, 0));
        let dir = tempfile::tempdir().expect("temp dir");
        let first = proxy.render(&config::watched("{admin}", port, 0));
        let volume = Volume::create(dir.path(), "proxy.yaml", first.as_bytes());
        let watcher = Watcher::start(&volume.path(), &proxy.admin, watcher_args);
        Rig {
            proxy,
            volume,
            watcher,
            port,
            _dir: dir,
        }
    }

    /// Configuration `n`, rendered for this proxy.
    pub fn config(&self, n: u32) -> String {
        self.proxy.render(&config::watched("{admin}", self.port, n))
    }

    /// Stops the watcher with SIGKILL and waits until it is gone.
    pub fn kill_watcher(&mut self) {
        let process = self.watcher.process();
        process.signal("KILL");
        assert!(
            process
                .wait_exit(std::time::Duration::from_secs(30))
                .is_some(),
            "the watcher did not stop on SIGKILL"
        );
    }

    /// Starts a new watcher on the volume with `watcher_args` in place of
    /// the old one (which should be stopped first).
    pub fn restart_watcher(&mut self, watcher_args: &[&str]) {
        self.watcher = Watcher::start(&self.volume.path(), &self.proxy.admin, watcher_args);
    }
}
