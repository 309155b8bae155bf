//! Real Kafka peers: the tansu broker and librdkafka's multi-broker mock
//! cluster, each a separate process on 127.0.0.1.

use std::process::Command;
use std::time::Duration;

use crate::python;
use sluice_testkit::ports::port;
use sluice_testkit::process::Proc;

/// A single-node tansu broker with in-memory storage. Its node id is 111.
#[derive(Debug)]
pub struct Tansu {
    /// `127.0.0.1:port`.
    pub addr: String,
    proc: Proc,
}

/// tansu's broker node id.
pub const TANSU_NODE_ID: i32 = 111;

impl Tansu {
    /// Starts tansu and waits until it says it is ready.
    pub fn start() -> Tansu {
        Self::start_advertising(None)
    }

    /// Starts tansu advertising another address than its own (for a TLS
    /// terminator in front of it).
    pub fn start_advertising(advertised: Option<&str>) -> Tansu {
        let addr = format!("127.0.0.1:{}", port());
        let listen = format!("tcp://{addr}");
        let advertised = advertised.map_or_else(|| listen.clone(), |a| format!("tcp://{a}"));
        let mut cmd = Command::new("tansu");
        cmd.args([
            "broker",
            "--listener-url",
            &listen,
            "--advertised-listener-url",
            &advertised,
        ]);
        cmd.args(["--storage-engine", "memory://tansu/"]);
        let mut proc = Proc::spawn("tansu", cmd);
        // tansu exits 0 when its port is taken, so readiness is its own line.
        proc.wait_for_line("ready in", Duration::from_secs(30));
        Tansu { addr, proc }
    }

    /// Creates a topic.
    pub fn create_topic(&self, name: &str, partitions: u32) {
        let out = Command::new("tansu")
            .args([
                "topic",
                "create",
                name,
                "--broker",
                &format!("tcp://{}", self.addr),
            ])
            .args(["--partitions", &partitions.to_string()])
            .output()
            .expect("run tansu topic create");
        assert!(
            out.status.success(),
            "tansu topic create {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The broker's port.
    pub fn port(&self) -> u16 {
        self.addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port")
    }

    /// The broker's PID.
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }
}

/// An OpenSSL TLS terminator (socat) on `127.0.0.1:port` in front of
/// `target`, presenting `cert` and `key`: a broker that speaks TLS.
pub fn tls_terminator(
    port: u16,
    cert: &std::path::Path,
    key: &std::path::Path,
    target: &str,
) -> Proc {
    let mut socat = Command::new("socat");
    socat.args(["-d", "-d"]).arg(format!(
        "OPENSSL-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork,cert={},key={},verify=0",
        cert.display(),
        key.display()
    ));
    socat.arg(format!("TCP:{target}"));
    let mut terminator = Proc::spawn("socat", socat);
    terminator.wait_for_line("listening on", Duration::from_secs(10));
    terminator
}

/// librdkafka's mock cluster: `n` brokers with node ids 1..=n on ephemeral ports.
#[derive(Debug)]
pub struct MockCluster {
    /// The brokers' addresses, node 1 first.
    pub brokers: Vec<String>,
    proc: Proc,
    commands: u32,
}

impl MockCluster {
    /// Starts `n` brokers with the given `topic:partitions`.
    pub fn start(n: u32, topics: &[&str]) -> MockCluster {
        let mut cmd = python::command("mock_cluster.py");
        cmd.arg(n.to_string()).args(topics);
        let mut proc = Proc::spawn("mock-cluster", cmd);
        let line = proc.wait_for_line("BOOTSTRAP ", Duration::from_secs(30));
        let brokers = line
            .trim_start_matches("BOOTSTRAP ")
            .split(',')
            .map(|s| s.trim().to_owned())
            .collect();
        MockCluster {
            brokers,
            proc,
            commands: 0,
        }
    }

    /// Takes broker `node` down (`up = false`) or brings it back, waiting
    /// for the mock to confirm.
    pub fn set_broker(&mut self, node: u32, up: bool) {
        self.command(&format!("{} {node}", if up { "up" } else { "down" }));
    }

    /// Makes the next `count` requests of `api` fail with error `code`
    /// (librdkafka's request-error injection, on whichever broker serves them).
    pub fn push_errors(&mut self, api: i16, code: i16, count: u32) {
        self.command(&format!("errors {api} {code} {count}"));
    }

    /// Moves the leadership of `topic`'s `partition` to broker `node`.
    pub fn set_leader(&mut self, topic: &str, partition: i32, node: u32) {
        self.command(&format!("leader {topic} {partition} {node}"));
    }

    /// Sends one command and waits for the mock to confirm it.
    fn command(&mut self, command: &str) {
        self.commands += 1;
        let line = format!("{} {command}", self.commands);
        self.proc.send_line(&line);
        let answer = self
            .proc
            .wait_for_line(&format!(" {line}"), Duration::from_secs(10));
        assert!(answer.starts_with("OK "), "mock cluster: {answer}");
    }

    /// The mock process's PID.
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// The brokers' ports, node 1 first.
    pub fn ports(&self) -> Vec<u16> {
        self.brokers
            .iter()
            .map(|b| {
                b.rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .expect("port")
            })
            .collect()
    }
}
