//! A `sluice-watcher` process pointed at a proxy.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::bin;
use crate::http::{self, Response};
use crate::ports::port;
use crate::process::Proc;

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
        Self::start_url(path, &format!("http://{admin}"), extra)
    }

    /// Like [`Watcher::start`], with the admin API's whole URL (`https://…`).
    pub fn start_url(path: &Path, proxy: &str, extra: &[&str]) -> Watcher {
        let http = format!("127.0.0.1:{}", port());
        let mut cmd = Command::new(bin("sluice-watcher"));
        cmd.arg("--path").arg(path);
        cmd.args([
            "--proxy",
            proxy,
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
