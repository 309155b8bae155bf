//! A `sluice-watcher` process pointed at a proxy.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::bin;
use crate::http::{self, Response};
use crate::ports::port;
use crate::process::Proc;

/// A swap while the proxy is down: the proxy is stopped with `signal`, the
/// file changes, the watcher retries, and once the proxy is back (with its
/// old configuration, on the same address) the watcher applies the new one.
pub fn swap_while_the_proxy_is_down(signal: &str) {
    use crate::config::{version, watched};
    use crate::ports::ports;
    use crate::proxy::{Options, Proxy};
    use crate::volume::Volume;
    let wait = Duration::from_secs(30);
    let (p, admin_port) = (ports(2), ports(1));
    let admin = format!("127.0.0.1:{admin_port}");
    let options = Options {
        admin_port: Some(admin_port),
        ..Options::default()
    };
    let first = watched(&admin, p, 0);
    let mut proxy = Proxy::launch(tempfile::tempdir().expect("dir"), &first, &options);
    let dir = tempfile::tempdir().expect("dir");
    let mut volume = Volume::create(dir.path(), "proxy.yaml", first.as_bytes());
    let mut watcher = Watcher::start(
        &volume.path(),
        &admin,
        &["--stagger", "0s", "--jitter", "0s"],
    );
    proxy.process().signal(signal);
    assert!(
        proxy.process().wait_exit(wait).is_some(),
        "the proxy did not stop on SIG{signal}"
    );
    drop(proxy);
    let next = watched(&admin, p, 1);
    volume.swap(next.as_bytes());
    watcher.wait_for_log("proxy call failed; retrying", wait);
    let proxy = Proxy::launch(tempfile::tempdir().expect("dir"), &first, &options);
    proxy.wait_for_version(&version(&next), wait);
    assert!(watcher.metric("sluice_watcher_retries_total") >= 1.0);
    proxy.assert_clean_logs();
}

/// A running watcher.
#[derive(Debug)]
pub struct Watcher {
    /// Its `/healthz` and `/metrics` address.
    pub http: String,
    proc: Proc,
}

impl Watcher {
    /// Starts `sluice-watcher --path <path> --proxy http://<admin>` with
    /// `extra` flags, waiting for its start line.
    pub fn start(path: &Path, admin: &str, extra: &[&str]) -> Watcher {
        let http = format!("127.0.0.1:{}", port());
        let mut cmd = Command::new(bin("sluice-watcher"));
        cmd.arg("--path").arg(path);
        cmd.args([
            "--proxy",
            &format!("http://{admin}"),
            "--metrics-listen",
            &http,
            "--log-format",
            "json",
        ]);
        cmd.args(extra);
        cmd.env("SLUICE_LOG", "info").env_remove("POD_NAME");
        let mut proc = Proc::spawn("sluice-watcher", cmd);
        proc.wait_for_line("watching configuration", Duration::from_secs(20));
        Watcher { http, proc }
    }

    /// `GET` on its HTTP server.
    pub fn get(&self, path: &str) -> Response {
        http::get(&self.http, path)
    }

    /// The value of one of its metric series (0 when absent).
    pub fn metric(&self, series: &str) -> f64 {
        http::metric(&self.http, series)
    }

    /// Waits for a log line containing `needle`.
    pub fn wait_for_log(&mut self, needle: &str, timeout: Duration) -> String {
        self.proc.wait_for_line(needle, timeout)
    }

    /// Every log line so far.
    pub fn logs(&self) -> Vec<String> {
        self.proc.lines()
    }

    /// The process.
    pub fn process(&mut self) -> &mut Proc {
        &mut self.proc
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // A failing test shows what the process said.
        if std::thread::panicking() {
            eprintln!("--- watcher log ---\n{}", self.proc.lines().join("\n"));
        }
    }
}
