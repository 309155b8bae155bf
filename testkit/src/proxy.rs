//! A `sluice-proxy run` process with its configuration in a temporary
//! directory, logs in JSON, and a check that it logged no unexpected warning.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use sluice_admin_api::{Clusters, ConfigStatus, endpoints};

use crate::bin;
use crate::http::{self, Response};
use crate::ports::port;
use crate::process::Proc;

/// How to start a proxy.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// More arguments for `sluice-proxy run`.
    pub args: Vec<String>,
    /// Run it where the configuration's directory is read-only.
    pub read_only_dir: bool,
    /// Admin port to use instead of a fresh one (to restart on the same address).
    pub admin_port: Option<u16>,
    /// `--file-root`s to pass. `None`: the system's temporary directory,
    /// where tests lay out their volumes side by side, as a pod mounts its
    /// Secrets beside its ConfigMap (and a manifest names each mount);
    /// `Some(vec![])`: none, the proxy's default (the configuration's
    /// directory).
    pub file_roots: Option<Vec<PathBuf>>,
}

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
        Self::launch(dir, config, &Options::default())
    }

    /// Starts the proxy with options, waiting until it is ready.
    pub fn launch(dir: tempfile::TempDir, config: &str, options: &Options) -> Proxy {
        let mut proc = Self::spawn(&dir, config, options);
        proc.1
            .wait_for_line("sluice-proxy ready", Duration::from_secs(30));
        let (admin, proc, path) = proc;
        Proxy {
            admin,
            config: path,
            allowed: Vec::new(),
            proc,
            dir,
        }
    }

    /// Starts the proxy without waiting for it: for startups expected to fail.
    pub fn spawn(
        dir: &tempfile::TempDir,
        config: &str,
        options: &Options,
    ) -> (String, Proc, PathBuf) {
        let admin = format!("127.0.0.1:{}", options.admin_port.unwrap_or_else(port));
        let path = dir.path().join("proxy.yaml");
        std::fs::write(&path, config.replace("{admin}", &admin)).expect("write config");
        let proxy = bin("sluice-proxy");
        let mut args = options.args.clone();
        let roots = options
            .file_roots
            .clone()
            .unwrap_or_else(|| vec![std::env::temp_dir()]);
        for root in roots {
            args.push("--file-root".to_owned());
            args.push(root.display().to_string());
        }
        let mut cmd = if options.read_only_dir {
            // A private mount namespace where the configuration's directory
            // is a read-only bind mount, as a ConfigMap volume is.
            let d = dir.path().display();
            let script = format!(
                "mount --bind -o ro {d} {d} && exec {} run --config {} --log-format json {}",
                proxy.display(),
                path.display(),
                args.join(" ")
            );
            let mut c = Command::new("unshare");
            c.args(["--mount", "--propagation", "private", "sh", "-c", &script]);
            c
        } else {
            let mut c = Command::new(&proxy);
            c.args(["run", "--config"])
                .arg(&path)
                .args(["--log-format", "json"])
                .args(&args);
            c
        };
        cmd.env("SLUICE_LOG", "info");
        (admin, Proc::spawn("sluice-proxy", cmd), path)
    }

    /// Replaces `{admin}` in a configuration with this proxy's admin address.
    pub fn render(&self, config: &str) -> String {
        config.replace("{admin}", &self.admin)
    }

    /// `POST /admin/config/reload` with a configuration (`{admin}` rendered).
    pub fn reload(&self, config: &str) -> Response {
        self.post(endpoints::RELOAD, self.render(config).as_bytes(), &[])
    }

    /// `POST /admin/config/validate` with a configuration (`{admin}` rendered).
    pub fn validate(&self, config: &str) -> Response {
        self.post(endpoints::VALIDATE, self.render(config).as_bytes(), &[])
    }

    /// `POST` on the admin API.
    pub fn post(&self, path: &str, body: &[u8], headers: &[(&str, &str)]) -> Response {
        http::request(&self.admin, "POST", path, headers, body)
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
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

    /// `GET /admin/config/status`.
    pub fn status(&self) -> ConfigStatus {
        self.get(endpoints::STATUS).parse()
    }

    /// `GET /admin/clusters`.
    pub fn clusters(&self) -> Clusters {
        self.get(endpoints::CLUSTERS).parse()
    }

    /// The generation cluster `name` runs (panics when there is none).
    pub fn generation(&self, name: &str) -> u64 {
        let clusters = self.clusters();
        let c = clusters.clusters.iter().find(|c| c.name == name);
        c.unwrap_or_else(|| panic!("no cluster {name}")).generation
    }

    /// How many client connections cluster `name` has accepted.
    pub fn connections_accepted(&self, name: &str) -> f64 {
        self.metric(&format!("sluice_connections_total{{cluster=\"{name}\"}}"))
    }

    /// The most RSS the proxy ever had (`VmHWM`), in bytes.
    pub fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()));
        let status = status.expect("the proxy's status");
        let kib = status.lines().find_map(|l| l.strip_prefix("VmHWM:"));
        let kib = kib.and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
        kib.expect("VmHWM") * 1024
    }

    /// The configuration version in force.
    pub fn version(&self) -> String {
        self.status().current_config_version.to_string()
    }

    /// Waits until the proxy runs `version` (polling its status, bounded).
    pub fn wait_for_version(&self, version: &str, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let current = self.version();
            if current == version {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "proxy still runs {current}, not {version}, after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The value of a metric series (0 when absent), e.g.
    /// `sluice_connections_total{cluster="a"}`.
    pub fn metric(&self, series: &str) -> f64 {
        http::metric(&self.admin, series)
    }

    /// The sum of the series of metric `name` whose labels contain
    /// `labels`, e.g. `("sluice_policy_denied_total", "principal=\"bob\"")`.
    pub fn metric_sum(&self, name: &str, labels: &str) -> f64 {
        http::metric_sum(&self.admin, name, labels)
    }

    /// Waits (bounded, polling the metrics endpoint) until `series` reaches
    /// `at_least`; returns its value then.
    pub fn wait_for_metric(&self, series: &str, at_least: f64, timeout: Duration) -> f64 {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let value = self.metric(series);
            if value >= at_least {
                return value;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{series} is {value}, not {at_least} or more, after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
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

impl Drop for Proxy {
    fn drop(&mut self) {
        // A failing test shows what the process said.
        if std::thread::panicking() {
            eprintln!("--- proxy log ---\n{}", self.proc.lines().join("\n"));
        }
    }
}
