//! What the data-plane benchmark runs: tansu brokers, haproxy in TCP
//! mode, sluice-proxy, and the rdkafka load client, all on 127.0.0.1.
//!
//! One broker (A) is reached through sluice-proxy (plaintext, and TLS on a
//! second cluster); another (B), configured the same, advertises haproxy's
//! address so that every connection of a client bootstrapped through
//! haproxy stays on haproxy; a third (C) does the same for haproxy's TLS
//! frontend; a fourth (D) is reached directly. So each path of a comparison
//! has a broker of its own, serving the same clients and holding the same
//! topics: with direct and sluice-proxy on one broker, it served two latency
//! clients where haproxy's served one, and its round trip was the longer
//! (issue 28's tail, docs/benchmarks.md). Both proxies terminate TLS with the same
//! certificate and speak plaintext to their broker. A third cluster of the
//! proxy in front of broker A is routed by SNI (`gateway.sni`): its clients
//! resolve its names through a hosts file of their own.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_testkit::certs::{self, Ca, Pki};
use sluice_testkit::ports::{port, ports};
use sluice_testkit::proxy::Proxy;
use sluice_tests::hosts::Hosts;
use sluice_tests::peers::{TANSU_NODE_ID, Tansu};
use sluice_tests::{config, python};

use crate::haproxy::{Frontend, Haproxy, start_haproxy};

mod clusters;
mod paths;

pub(crate) use clusters::SCRAM_USER;
use clusters::{BY_PRINCIPAL, FILTERS, MTLS, TENANT, scram_cluster};

/// How a client reaches the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Path {
    /// Straight to broker A.
    Direct,
    /// Through sluice-proxy to broker A.
    Sluice,
    /// Through haproxy (TCP mode) to broker B.
    Haproxy,
    /// TLS to sluice-proxy, plaintext on to broker A.
    SluiceTls,
    /// TLS to haproxy, plaintext on to broker C.
    HaproxyTls,
    /// TLS to sluice-proxy's SNI port, plaintext on to broker A.
    SluiceSni,
    /// Through sluice-proxy to broker A, on a cluster with an allow-all
    /// topic policy and a quota no run reaches.
    SluiceFiltered,
    /// TLS with a client certificate to sluice-proxy, mapped to a
    /// principal (`authentication.mtls`), plaintext on to broker A.
    SluiceMtls,
    /// As [`Path::SluiceMtls`], on a cluster whose topic policy judges
    /// every request by that principal.
    SluiceMtlsPolicy,
    /// TLS to sluice-proxy, which terminates SASL/SCRAM-SHA-512
    /// (`authentication.sasl`), plaintext on to broker A.
    SluiceScram,
    /// Through sluice-proxy to broker A, on a tenant's cluster (`tenancy`:
    /// every name prefixed upstream).
    SluiceTenant,
}

impl Path {
    /// Whether clients speak TLS on this path.
    pub(crate) fn tls(self) -> bool {
        matches!(
            self,
            Path::SluiceTls
                | Path::HaproxyTls
                | Path::SluiceSni
                | Path::SluiceMtls
                | Path::SluiceMtlsPolicy
                | Path::SluiceScram
        )
    }
}

/// The SNI cluster's name and the domain of its server names.
const SNI_CLUSTER: &str = "bench-sni";
const SNI_DOMAIN: &str = "bench-sni.sni.bench";

/// The running peers.
pub(crate) struct Rig {
    a: Tansu,
    d: Tansu,
    b: Tansu,
    c: Tansu,
    haproxy: Haproxy,
    haproxy_addr: String,
    haproxy_tls_addr: String,
    /// The proxy in front of broker A.
    pub(crate) proxy: Proxy,
    proxy_bootstrap: String,
    proxy_tls_bootstrap: String,
    proxy_sni_bootstrap: String,
    proxy_filtered_bootstrap: String,
    proxy_tenant_bootstrap: String,
    /// The identity clusters' bootstraps: mTLS, mTLS with a policy, SCRAM.
    proxy_identity_bootstrap: [String; 3],
    /// What the SNI path's clients resolve its names with.
    hosts: Hosts,
    /// The CA of the SNI cluster's certificate.
    sni_ca: std::path::PathBuf,
    /// The CA that signed both proxies' certificate (and the files).
    pub(crate) pki: Pki,
    _certs: tempfile::TempDir,
    topics: u32,
}

impl Rig {
    /// Starts everything and waits until each peer serves.
    pub(crate) fn start() -> Rig {
        let certs = tempfile::tempdir().expect("certificate dir");
        let pki = certs::make(certs.path(), "bench");
        let a = Tansu::start();
        let d = Tansu::start();
        let haproxy_addr = format!("127.0.0.1:{}", port());
        let haproxy_tls_addr = format!("127.0.0.1:{}", port());
        let b = Tansu::start_advertising(Some(&haproxy_addr));
        let c = Tansu::start_advertising(Some(&haproxy_tls_addr));
        let haproxy = start_haproxy(&[
            Frontend::plain(&haproxy_addr, &b.addr),
            Frontend::tls(&haproxy_tls_addr, &c.addr, &pki),
        ]);
        let base = ports(14);
        let tls = format!(
            "      tls: {{ certFile: \"{}\", keyFile: \"{}\" }}\n",
            pki.server_cert.display(),
            pki.server_key.display()
        );
        let sni_port = port();
        let sni_ca = Ca::new("bench SNI CA");
        let (sni_cert, sni_key) = sni_ca
            .sign(&[&format!("*.{SNI_DOMAIN}")], "sni", None)
            .write(certs.path(), "sni.crt", "sni.key");
        let sni = format!(
            "  - name: {SNI_CLUSTER}\n    upstream: {{ bootstrapServers: [\"{}\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      sni: {{ port: {sni_port}, bootstrapHost: bootstrap.{SNI_DOMAIN}, brokerHostPattern: \"broker-$(nodeId).{SNI_DOMAIN}\" }}\n      tls: {{ certFile: \"{}\", keyFile: \"{}\" }}\n",
            a.addr,
            sni_cert.display(),
            sni_key.display()
        );
        let hosts = Hosts::new(&[
            format!("bootstrap.{SNI_DOMAIN}"),
            format!("broker-{TANSU_NODE_ID}.{SNI_DOMAIN}"),
        ]);
        let mtls = MTLS
            .replace("{cert}", &pki.server_cert.display().to_string())
            .replace("{key}", &pki.server_key.display().to_string())
            .replace("{ca}", &pki.ca.display().to_string());
        let policy = mtls.clone() + BY_PRINCIPAL;
        let scram = scram_cluster(certs.path(), &tls);
        let proxy = Proxy::start(&config::with_drain(
            "1s",
            &[
                config::tansu_cluster("bench", &a.addr, base, ""),
                config::tansu_cluster("bench-tls", &a.addr, base + 2, &tls),
                sni,
                config::tansu_cluster("bench-filtered", &a.addr, base + 4, FILTERS),
                config::tansu_cluster("bench-mtls", &a.addr, base + 6, &mtls),
                config::tansu_cluster("bench-mtls-policy", &a.addr, base + 8, &policy),
                config::tansu_cluster("bench-scram", &a.addr, base + 10, &scram),
                config::tansu_cluster("bench-tenant", &a.addr, base + 12, TENANT),
            ],
        ));
        Rig {
            a,
            d,
            b,
            c,
            haproxy,
            haproxy_addr,
            haproxy_tls_addr,
            proxy,
            proxy_bootstrap: format!("127.0.0.1:{base}"),
            proxy_tls_bootstrap: format!("127.0.0.1:{}", base + 2),
            proxy_sni_bootstrap: format!("bootstrap.{SNI_DOMAIN}:{sni_port}"),
            proxy_filtered_bootstrap: format!("127.0.0.1:{}", base + 4),
            proxy_tenant_bootstrap: format!("127.0.0.1:{}", base + 12),
            proxy_identity_bootstrap: [6, 8, 10].map(|at| format!("127.0.0.1:{}", base + at)),
            hosts,
            sni_ca: sni_ca.write(certs.path(), "sni-ca.pem"),
            pki,
            _certs: certs,
            topics: 0,
        }
    }
}

/// This process's soft limit on open files, which the servers it starts
/// inherit (`scripts/bench` raises it as far as it may).
pub(crate) fn open_file_limit() -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024)
}

/// Waits until something accepts connections on `addr`.
pub(crate) fn wait_listening(addr: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {addr}");
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// A `Vm…` figure of `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`).
pub(crate) fn vm_kib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(f64::NAN)
}

/// Starts a new peak of RSS for `pid`: `VmHWM` then tells the most RSS
/// since this call (a write of 5 to `clear_refs`, which resets it).
pub(crate) fn reset_peak_rss(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

/// How long one `bench_load.py` run may take.
const LOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs `bench_load.py` to its end and returns its report.
pub(crate) fn load(args: &[&str]) -> Value {
    checked(python::run_json("bench_load.py", args, LOAD_TIMEOUT), args)
}

/// A load report, which must hold no error.
fn checked(report: Value, args: &[&str]) -> Value {
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
