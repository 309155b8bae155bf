//! Running the Python Kafka clients (confluent-kafka, librdkafka 2.16) from
//! `tests/clients`, with the virtualenv `scripts/install-test-deps` made.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use sluice_testkit::repo;

/// The virtualenv's interpreter.
pub fn interpreter() -> PathBuf {
    let venv = std::env::var_os("SLUICE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/sluice/venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/install-test-deps",
        python.display()
    );
    python
}

/// A command running `tests/clients/<script>`.
pub fn command(script: &str) -> Command {
    let mut cmd = Command::new(interpreter());
    cmd.arg(repo().join("tests/clients").join(script));
    cmd.env("PYTHONUNBUFFERED", "1");
    cmd
}

/// Runs a client script to its end (at most `timeout`) and parses the last
/// line it printed as JSON.
pub fn run_json(script: &str, args: &[&str], timeout: Duration) -> serde_json::Value {
    let mut cmd = command(script);
    cmd.args(args);
    run_json_command(cmd, timeout)
}

/// `sasl_client.py` at `bootstrap`: logs in with `login` (mechanism, user,
/// password; for OAUTHBEARER the password is the token) through `library`
/// (`librdkafka` or `kafka-python`), then produces one message to `orders`
/// and one to `audit`; what it printed.
pub fn sasl_client(bootstrap: &str, login: [&str; 3], library: &str) -> serde_json::Value {
    let [mechanism, user, password] = login;
    let args = [
        bootstrap,
        mechanism,
        user,
        password,
        "orders",
        "audit",
        "--library",
        library,
    ];
    run_json("sasl_client.py", &args, Duration::from_secs(90))
}

/// Runs a client command (its script and arguments given) to its end, at
/// most `timeout`, and parses the last line it printed as JSON.
pub fn run_json_command(mut cmd: Command, timeout: Duration) -> serde_json::Value {
    let what = format!("{cmd:?}");
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null());
    let child = cmd.spawn().unwrap_or_else(|e| panic!("run {what}: {e}"));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(timeout) {
        Ok(out) => out.expect("wait for client"),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("{what} did not finish within {timeout:?}");
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|_| {
        panic!(
            "{what} ({}) printed no JSON:\nstdout:\n{stdout}\nstderr:\n{stderr}",
            output.status
        )
    })
}

/// A client that reported and now holds its connections open until dropped.
#[derive(Debug)]
pub struct Holding {
    /// What the client reported.
    pub report: serde_json::Value,
    child: std::process::Child,
}

impl Holding {
    /// The client's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        if self
            .child
            .wait_timeout_or_kill(Duration::from_secs(20))
            .is_none()
        {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

trait WaitTimeout {
    fn wait_timeout_or_kill(&mut self, timeout: Duration) -> Option<std::process::ExitStatus>;
}

impl WaitTimeout for std::process::Child {
    fn wait_timeout_or_kill(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.try_wait() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Runs `roundtrip.py` with `--hold`: returns once it has reported, with its
/// connections still open so the test can inspect them.
pub fn roundtrip_holding(args: &[&str]) -> Holding {
    let mut cmd = command("roundtrip.py");
    cmd.args(args);
    holding(cmd)
}

/// Runs a `roundtrip.py` command (arguments given) with `--hold`, as
/// [`roundtrip_holding`] does.
pub fn holding(mut cmd: Command) -> Holding {
    use std::io::BufRead;
    cmd.arg("--hold")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("start roundtrip.py");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read report");
    let report = serde_json::from_str(&line)
        .unwrap_or_else(|_| panic!("roundtrip.py printed no report: {line:?}"));
    Holding { report, child }
}

/// `steady.py`: a producer and a consumer group running until [`Steady::finish`].
#[derive(Debug)]
pub struct Steady {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    progress: std::sync::Arc<std::sync::Mutex<Progress>>,
}

/// What a running `steady.py --progress` last said (every 200 ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Messages acknowledged so far.
    pub acked: u64,
    /// Errors reported so far.
    pub errors: u64,
}

impl Steady {
    /// Starts it and waits until its first message made the round trip.
    pub fn start(bootstrap: &str, topic: &str, group: &str, idempotent: bool) -> Steady {
        let mut cmd = command("steady.py");
        cmd.args([bootstrap, topic, group]);
        if idempotent {
            cmd.arg("--idempotent");
        }
        Self::start_command(cmd)
    }

    /// Like [`Steady::start`] (idempotent), and when acknowledged messages
    /// go unconsumed, the report says which of them `broker` itself still
    /// has (`skipped_by_group`) and which it does not (`missing_from_log`).
    pub fn start_verified(bootstrap: &str, topic: &str, group: &str, broker: &str) -> Steady {
        let mut cmd = command("steady.py");
        cmd.args([bootstrap, topic, group, "--idempotent", "--verify", broker]);
        Self::start_command(cmd)
    }

    /// Starts it speaking TLS to `bootstrap`, verifying against `ca`, and
    /// presenting the client certificate `cert` (certificate and key files).
    pub fn start_mtls(
        bootstrap: &str,
        topic: &str,
        group: &str,
        ca: &std::path::Path,
        cert: [&std::path::Path; 2],
    ) -> Steady {
        let mut cmd = command("steady.py");
        cmd.args([bootstrap, topic, group, "--idempotent", "--ca"])
            .arg(ca);
        cmd.arg("--cert").args(cert);
        Self::start_command(cmd)
    }

    /// Starts it speaking TLS to `bootstrap`, verifying against `ca`.
    pub fn start_tls(bootstrap: &str, topic: &str, group: &str, ca: &std::path::Path) -> Steady {
        let mut cmd = command("steady.py");
        cmd.args([bootstrap, topic, group, "--idempotent", "--ca"])
            .arg(ca);
        Self::start_command(cmd)
    }

    /// Starts it authenticating with SASL `mechanism` as `user`.
    pub fn start_sasl(bootstrap: &str, topic: &str, group: &str, sasl: [&str; 3]) -> Steady {
        let mut cmd = command("steady.py");
        cmd.args([bootstrap, topic, group, "--sasl"]).args(sasl);
        Self::start_command(cmd)
    }

    /// Starts it inside network namespace `ns` (a test "pod", see
    /// `sluice_testkit::netns`), not idempotent, reporting its
    /// [`Progress`].
    pub fn start_in(ns: &str, bootstrap: &str, topic: &str, group: &str) -> Steady {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]).arg(interpreter());
        cmd.arg(repo().join("tests/clients/steady.py"));
        cmd.env("PYTHONUNBUFFERED", "1");
        cmd.args([bootstrap, topic, group, "--progress"]);
        Self::start_command(cmd)
    }

    /// Starts a `steady.py` command (arguments given), as [`Steady::start`] does.
    pub fn start_command(mut cmd: Command) -> Steady {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("start steady.py");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        let progress = std::sync::Arc::new(std::sync::Mutex::new(Progress::default()));
        let said = std::sync::Arc::clone(&progress);
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(p) = parse_progress(&line) {
                    *said
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = p;
                } else if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = lines
            .recv_timeout(Duration::from_secs(60))
            .expect("steady.py did not start");
        assert_eq!(first, "STARTED");
        Steady {
            child,
            lines,
            progress,
        }
    }

    /// What it last said of its progress (all zero without `--progress`).
    pub fn progress(&self) -> Progress {
        *self
            .progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The client's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops producing, waits for every acknowledged message to be consumed,
    /// and returns the report.
    pub fn finish(mut self) -> serde_json::Value {
        drop(self.child.stdin.take());
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(90))
            .expect("steady.py report");
        let _ = self.child.wait();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not a report: {line}"))
    }
}

/// `PROGRESS <acked> <errors>`.
fn parse_progress(line: &str) -> Option<Progress> {
    let mut words = line.strip_prefix("PROGRESS ")?.split(' ');
    let acked = words.next()?.parse().ok()?;
    let errors = words.next()?.parse().ok()?;
    Some(Progress { acked, errors })
}

impl Drop for Steady {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
