//! What the data-plane benchmark runs: two tansu brokers, haproxy in TCP
//! mode, sluice-proxy, and the rdkafka load client, all on 127.0.0.1.
//!
//! One broker (A) is reached directly and through sluice-proxy; the other
//! (B), configured the same, advertises haproxy's address so that every
//! connection of a client bootstrapped through haproxy stays on haproxy.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_testkit::ports::{port, ports};
use sluice_testkit::process::Proc;
use sluice_testkit::proxy::Proxy;
use sluice_tests::peers::Tansu;
use sluice_tests::{config, python};

/// How a client reaches the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Path {
    /// Straight to broker A.
    Direct,
    /// Through sluice-proxy to broker A.
    Sluice,
    /// Through haproxy (TCP mode) to broker B.
    Haproxy,
}

/// The running peers.
pub(crate) struct Rig {
    a: Tansu,
    b: Tansu,
    haproxy: Proc,
    haproxy_addr: String,
    /// The proxy in front of broker A.
    pub(crate) proxy: Proxy,
    proxy_bootstrap: String,
    topics: u32,
}

impl Rig {
    /// Starts everything and waits until each peer serves.
    pub(crate) fn start() -> Rig {
        let a = Tansu::start();
        let haproxy_addr = format!("127.0.0.1:{}", port());
        let b = Tansu::start_advertising(Some(&haproxy_addr));
        let haproxy = start_haproxy(&haproxy_addr, &b.addr);
        let base = ports(2);
        let proxy = Proxy::start(&config::with_drain(
            "1s",
            &[config::tansu_cluster("bench", &a.addr, base, "")],
        ));
        Rig {
            a,
            b,
            haproxy,
            haproxy_addr,
            proxy,
            proxy_bootstrap: format!("127.0.0.1:{base}"),
            topics: 0,
        }
    }

    /// Where a client on `path` bootstraps.
    pub(crate) fn bootstrap(&self, path: Path) -> &str {
        match path {
            Path::Direct => &self.a.addr,
            Path::Sluice => &self.proxy_bootstrap,
            Path::Haproxy => &self.haproxy_addr,
        }
    }

    /// The broker behind `path`.
    pub(crate) fn broker(&self, path: Path) -> &Tansu {
        match path {
            Path::Direct | Path::Sluice => &self.a,
            Path::Haproxy => &self.b,
        }
    }

    /// The process in the middle of `path`, if any.
    pub(crate) fn middle(&self, path: Path) -> Option<u32> {
        match path {
            Path::Direct => None,
            Path::Sluice => Some(self.proxy.pid()),
            Path::Haproxy => Some(self.haproxy.pid()),
        }
    }

    /// A new single-partition topic on the broker behind `path`.
    pub(crate) fn topic(&mut self, path: Path) -> String {
        self.topics += 1;
        let name = format!("bench-{}", self.topics);
        self.broker(path).create_topic(&name, 1);
        name
    }

    /// Deletes a topic, so the in-memory broker does not grow run after run.
    pub(crate) fn drop_topic(&self, path: Path, name: &str) {
        let out = Command::new("tansu")
            .args(["topic", "delete", name, "--broker"])
            .arg(format!("tcp://{}", self.broker(path).addr))
            .output()
            .expect("run tansu topic delete");
        assert!(out.status.success(), "tansu topic delete {name}");
    }
}

fn start_haproxy(listen: &str, backend: &str) -> Proc {
    let dir = std::env::temp_dir().join(format!("sluice-bench-haproxy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("haproxy dir");
    let cfg = dir.join("haproxy.cfg");
    // Debian's haproxy with its defaults for a TCP pass-through: one thread
    // per CPU, 16 KiB buffers, no logging.
    std::fs::write(
        &cfg,
        format!(
            "global\n  maxconn 4096\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 120s\n  timeout server 120s\nfrontend bench\n  bind {listen}\n  default_backend broker\nbackend broker\n  server b {backend}\n"
        ),
    )
    .expect("write haproxy.cfg");
    let mut cmd = Command::new("haproxy");
    cmd.arg("-db").arg("-f").arg(&cfg);
    let proc = Proc::spawn("haproxy", cmd);
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(listen).is_err() {
        assert!(
            Instant::now() < deadline,
            "haproxy did not listen on {listen}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    proc
}

/// CPU seconds a process's threads have run (the scheduler's nanosecond
/// count, summed over `/proc/PID/task/*/schedstat`; the tick-based
/// utime/stime are too coarse for runs of a second). Threads that exited
/// during a run are not counted: the proxy's and haproxy's threads live as
/// long as the process.
pub(crate) fn cpu_seconds(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return f64::NAN;
    };
    let nanos: u64 = tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    nanos as f64 / 1e9
}

/// Runs `bench_load.py` to its end and returns its report.
pub(crate) fn load(args: &[&str]) -> Value {
    let report = python::run_json("bench_load.py", args, Duration::from_secs(300));
    let errors = report["errors"].as_array().map_or(0, Vec::len);
    assert!(errors == 0, "bench_load.py {args:?}: {report}");
    report
}

/// A `bench_load.py latency --hold` run: measuring once started, until
/// [`Held::finish`].
pub(crate) struct Held {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Held {
    /// Starts it and waits for its warm-up to end.
    pub(crate) fn start(args: &[&str]) -> Held {
        let mut cmd = python::command("bench_load.py");
        cmd.args(args)
            .arg("--hold")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("start bench_load.py");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read READY");
        assert_eq!(line.trim(), "READY", "bench_load.py did not start");
        Held {
            child,
            stdin,
            stdout,
        }
    }

    /// Stops measuring and returns the report.
    pub(crate) fn finish(mut self) -> Value {
        drop(self.stdin.take());
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read report");
        let _ = self.child.wait();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not a report: {line}"))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
