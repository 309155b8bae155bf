//! A `sluice-proxy run` process with its configuration in a temporary
//! directory, logs in JSON, and a check that it logged no unexpected warning.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::bin;
use crate::http::{self, Response};
use crate::ports::port;
use crate::process::Proc;

/// A running proxy.
#[derive(Debug)]
pub struct Proxy {
    /// `127.0.0.1:port` of the admin API.
    pub admin: String,
    /// The configuration file.
    pub config: PathBuf,
    /// Log lines containing any of these are expected warnings or errors.
    pub allowed: Vec<String>,
    proc: Proc,
    dir: tempfile::TempDir,
}

impl Proxy {
    /// Writes `config` (with `{admin}` replaced by a free admin address) and
    /// starts the proxy, waiting until it is ready.
    pub fn start(config: &str) -> Proxy {
        let dir = tempfile::tempdir().expect("temp dir");
        Self::start_in(dir, config)
    }

    /// Like [`Proxy::start`], in a directory the test prepared (certificates...).
    pub fn start_in(dir: tempfile::TempDir, config: &str) -> Proxy {
        let admin = format!("127.0.0.1:{}", port());
        let path = dir.path().join("proxy.yaml");
        std::fs::write(&path, config.replace("{admin}", &admin)).expect("write config");
        let mut cmd = Command::new(bin("sluice-proxy"));
        cmd.args(["run", "--config"])
            .arg(&path)
            .args(["--log-format", "json"]);
        cmd.env("SLUICE_LOG", "info");
        let mut proc = Proc::spawn("sluice-proxy", cmd);
        proc.wait_for_line("sluice-proxy ready", Duration::from_secs(30));
        Proxy {
            admin,
            config: path,
            allowed: Vec::new(),
            proc,
            dir,
        }
    }

    /// The temporary directory holding the configuration.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The proxy's PID.
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// Marks log lines containing `pattern` as expected.
    pub fn allow(&mut self, pattern: &str) {
        self.allowed.push(pattern.to_owned());
    }

    /// `GET` on the admin API.
    pub fn get(&self, path: &str) -> Response {
        http::get(&self.admin, path)
    }

    /// The value of a metric series (0 when absent), e.g.
    /// `sluice_connections_total{cluster="a"}`.
    pub fn metric(&self, series: &str) -> f64 {
        let text = self.get("/metrics").body;
        text.lines()
            .find_map(|l| {
                l.strip_prefix(series)
                    .and_then(|rest| rest.trim().parse().ok())
            })
            .unwrap_or(0.0)
    }

    /// Waits for a log line containing `needle`.
    pub fn wait_for_log(&mut self, needle: &str, timeout: Duration) -> String {
        self.proc.wait_for_line(needle, timeout)
    }

    /// Every log line so far.
    pub fn logs(&self) -> Vec<String> {
        self.proc.lines()
    }

    /// Warning and error lines not marked as expected.
    pub fn unexpected_warnings(&self) -> Vec<String> {
        self.proc
            .lines()
            .into_iter()
            .filter(|l| l.contains("\"level\":\"WARN\"") || l.contains("\"level\":\"ERROR\""))
            .filter(|l| !self.allowed.iter().any(|a| l.contains(a.as_str())))
            .collect()
    }

    /// Asserts the proxy logged no unexpected warning or error.
    pub fn assert_clean_logs(&self) {
        let bad = self.unexpected_warnings();
        assert!(
            bad.is_empty(),
            "unexpected warnings or errors:\n{}",
            bad.join("\n")
        );
    }

    /// Access to the process (signals, exit).
    pub fn process(&mut self) -> &mut Proc {
        &mut self.proc
    }
}
