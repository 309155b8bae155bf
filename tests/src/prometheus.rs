//! A real Prometheus for the tests: Debian's 2.42 server and `promtool`
//! (extracted by `scripts/install-test-deps`), the shipped rules
//! (`manifests/monitoring/sluice.rules.yaml`) and dashboard, and a server
//! started by a test with its own configuration and data directory, asked
//! for its alerts over its HTTP API.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_testkit::process::Proc;
use sluice_testkit::repo;

use crate::manifests::yaml_documents;

/// The shipped rules file, the one source of the alerts.
pub fn rules_file() -> PathBuf {
    repo().join("manifests/monitoring/sluice.rules.yaml")
}

/// The shipped Grafana dashboard.
pub fn dashboard_file() -> PathBuf {
    repo().join("manifests/monitoring/sluice-dashboard.json")
}

/// The shipped rules, parsed.
pub fn rules() -> Value {
    let text = std::fs::read_to_string(rules_file()).expect("read the rules file");
    yaml_documents(&text).remove(0)
}

/// Every alerting rule of `rules` (a rules file's value).
pub fn alerting_rules(rules: &Value) -> Vec<&Value> {
    rules["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules"))
        .filter(|r| r.get("alert").is_some())
        .collect()
}

/// Runs `promtool` with `args`.
pub fn promtool(args: &[&str]) -> Output {
    Command::new("promtool")
        .args(args)
        .output()
        .expect("run promtool (scripts/install-test-deps installs it)")
}

/// `promtool check metrics` (its linter of metric names) on an OpenMetrics
/// exposition, given to it in Prometheus's text format.
pub fn promtool_check_metrics(openmetrics: &str) -> Output {
    let text = crate::promql::as_prometheus_text(openmetrics);
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run promtool");
    let mut stdin = child.stdin.take().expect("stdin");
    std::io::Write::write_all(&mut stdin, text.as_bytes()).expect("write to promtool");
    drop(stdin);
    child.wait_with_output().expect("promtool's output")
}

/// A finished command's stdout and stderr, as text.
pub fn output(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The shipped rules as a rules file (JSON, which is YAML) whose every
/// `for:` is `hold` instead: what a test's Prometheus evaluates, so that an
/// alert fires in seconds with the shipped expressions.
pub fn rules_holding_for(hold: &str) -> String {
    let mut rules = rules();
    for group in rules["groups"].as_array_mut().expect("groups") {
        for rule in group["rules"].as_array_mut().expect("rules") {
            if rule.get("for").is_some() {
                rule["for"] = Value::from(hold);
            }
        }
    }
    serde_json::to_string_pretty(&rules).expect("JSON")
}

/// A scrape job: its name and its targets (`host:port`).
#[derive(Debug, Clone)]
pub struct Job {
    /// `job` label.
    pub name: &'static str,
    /// `host:port` of each target.
    pub targets: Vec<String>,
}

/// A running Prometheus, killed by PID (with its data directory removed)
/// when dropped.
#[derive(Debug)]
pub struct Prometheus {
    proc: Proc,
    /// `http://host:port` of its API.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts `prometheus` through `command` (a plain `Command::new`, or one
    /// that runs it inside a network namespace) listening on `listen`,
    /// scraping `jobs` and evaluating `rules` every `interval`.
    pub fn start(
        command: impl FnOnce(&str) -> Command,
        listen: &str,
        jobs: &[Job],
        rules: &str,
        interval: &str,
    ) -> Prometheus {
        let dir = tempfile::tempdir().expect("temp dir");
        let rules_path = dir.path().join("rules.json");
        std::fs::write(&rules_path, rules).expect("write rules");
        let scrape: Vec<Value> = jobs
            .iter()
            .map(|j| serde_json::json!({"job_name": j.name, "static_configs": [{"targets": j.targets}]}))
            .collect();
        let config = serde_json::json!({
            "global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
            "rule_files": [rules_path],
            "scrape_configs": scrape,
        });
        let config_path = dir.path().join("prometheus.json");
        std::fs::write(&config_path, config.to_string()).expect("write config");
        let mut cmd = command("prometheus");
        cmd.arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={listen}"));
        let mut proc = Proc::spawn("prometheus", cmd);
        proc.wait_for_line(
            "Server is ready to receive web requests",
            Duration::from_secs(30),
        );
        Prometheus {
            proc,
            url: format!("http://{listen}"),
            _dir: dir,
        }
    }

    /// Its log lines.
    pub fn logs(&self) -> Vec<String> {
        self.proc.lines()
    }
}

/// Starts `sluice-webhook` through `command` (plain, or inside a network
/// namespace) on `listen` with this certificate and key, its metrics on
/// plain HTTP at `metrics`, and waits until it is ready.
pub fn webhook(
    mut command: Command,
    listen: &str,
    metrics: &str,
    (cert, key): (PathBuf, PathBuf),
) -> Proc {
    command
        .args(["--listen", listen, "--metrics-listen", metrics])
        .arg("--tls-cert")
        .arg(cert)
        .arg("--tls-key")
        .arg(key);
    let mut webhook = Proc::spawn("sluice-webhook", command);
    webhook.wait_for_line("webhook ready", Duration::from_secs(20));
    webhook
}

/// The value of the first sample of an `/api/v1/query` answer.
pub fn first_value(body: &str) -> Option<f64> {
    let v: Value = serde_json::from_str(body).ok()?;
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

/// An active alert: its name, `pending` or `firing`, and its labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// `alertname`.
    pub name: String,
    /// `pending` or `firing`.
    pub state: String,
    /// Every label (`alertname` included).
    pub labels: BTreeMap<String, String>,
}

/// Every active alert in an `/api/v1/alerts` body.
pub fn alert_states(body: &str) -> Vec<Alert> {
    let v: Value = serde_json::from_str(body).expect("JSON from /api/v1/alerts");
    v["data"]["alerts"]
        .as_array()
        .expect("alerts")
        .iter()
        .map(|a| {
            let labels: BTreeMap<String, String> =
                serde_json::from_value(a["labels"].clone()).expect("labels");
            Alert {
                name: labels.get("alertname").cloned().unwrap_or_default(),
                state: a["state"].as_str().unwrap_or_default().to_owned(),
                labels,
            }
        })
        .collect()
}

/// Polls `alerts` (an `/api/v1/alerts` body, `None` while unreachable) at
/// most `timeout` until `done` holds for its states; returns every state
/// seen on the way, in order, deduplicated.
pub fn wait_for_alerts(
    what: &str,
    timeout: Duration,
    mut alerts: impl FnMut() -> Option<String>,
    done: impl Fn(&[Alert]) -> bool,
) -> Vec<Alert> {
    let deadline = Instant::now() + timeout;
    let mut seen: Vec<Alert> = Vec::new();
    loop {
        let now = alerts().map(|b| alert_states(&b)).unwrap_or_default();
        for s in &now {
            if !seen.contains(s) {
                seen.push(s.clone());
            }
        }
        if done(&now) {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; alerts now {now:?}, seen {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The PrometheusRule (`manifests/monitoring/prometheusrule.yaml`) made from
/// the rules file's text: its groups, as they are, under `spec`.
pub fn prometheus_rule(rules_text: &str) -> String {
    let groups = rules_text
        .find("\ngroups:")
        .map(|at| &rules_text[at + 1..])
        .expect("a rules file with groups");
    let mut out = String::from(
        "# Generated from sluice.rules.yaml (its groups under `spec`): edit that file,\n\
         # then `SLUICE_BLESS=1 cargo nextest run -p sluice-tests --test e2e ops::rules`.\n\
         # Add the label your Prometheus's ruleSelector asks for (kube-prometheus-stack:\n\
         # `release: <its release name>`) in your own overlay.\n\
         apiVersion: monitoring.coreos.com/v1\n\
         kind: PrometheusRule\n\
         metadata:\n  name: sluice\n  namespace: kafka-proxy\n  labels:\n    app.kubernetes.io/name: sluice-proxy\n\
         spec:\n",
    );
    for line in groups.lines() {
        if !line.is_empty() {
            out.push_str("  ");
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
