//! Edges of the reload path against the real binaries (the reload-edges
//! issue): a referenced file that is a FIFO, watcher intervals of zero, and
//! in the submodules best-effort isolation, shutdown, SIGHUP during a
//! reload, persisting, and admin reads during a reload.

use std::process::Command;
use std::time::{Duration, Instant};

use sluice_testkit::bin;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;

mod isolation;
mod liveness;
mod persist;
mod reads;
mod shutdown;
mod sighup;

/// An upstream the proxy never needs (no reload checks it).
const NO_CHECK: &str = "bootstrapServers: [127.0.0.1:9], checkOnReload: false";

/// One cluster: bootstrap on `port`, one broker port after it.
fn cluster(name: &str, port: u16, upstream: &str, gateway: &str) -> String {
    format!(
        "  - name: {name}\n    upstream: {{ {upstream} }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }}{gateway} }}\n",
        port + 1
    )
}

/// A configuration: `top` (top-level settings, each line ending in a
/// newline) and the clusters.
fn proxy_config(top: &str, clusters: &[String]) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\n{top}virtualClusters:\n{}",
        clusters.concat()
    )
}

/// A port that completes TCP handshakes (the kernel's backlog) and never
/// answers: an upstream that hangs every request.
fn black_hole() -> (std::net::TcpListener, u16) {
    let port = sluice_testkit::ports::port();
    let hole = std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind the black hole");
    (hole, port)
}

/// How many clusters [`many`] has: enough that a reload modifying them all
/// takes a while.
const CLUSTERS: u16 = 40;
const CAS_PER_BUNDLE: usize = 150;

/// A directory with the files [`many`] names: a test server pair and a
/// bundle of many CAs, which each generation parses again on both sides.
fn slow_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    sluice_testkit::certs::make(dir.path(), "slow");
    let bundle: String = (0..CAS_PER_BUNDLE)
        .map(|i| sluice_testkit::certs::Ca::new(&format!("bundle CA {i}")).pem)
        .collect();
    std::fs::write(dir.path().join("bundle.pem"), bundle).expect("bundle");
    dir
}

/// [`CLUSTERS`] clusters from `port` on, slow to prepare (TLS both ways
/// with the bundle of [`slow_dir`]), advertising `host`.
fn many(port: u16, host: &str) -> String {
    let clusters: Vec<String> = (0..CLUSTERS)
        .map(|i| {
            let tls = ", tls: { certFile: server.crt, keyFile: server.key, clientCaFile: bundle.pem }";
            let upstream = "bootstrapServers: [127.0.0.1:9], checkOnReload: false, tls: { caFile: bundle.pem }";
            cluster(&format!("c{i}"), port + 2 * i, upstream, tls).replace("localhost", host)
        })
        .collect();
    proxy_config("", &clusters)
}

fn config(port: u16, gateway_tls: &str) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: a\n    upstream: {{ bootstrapServers: [127.0.0.1:9], checkOnReload: false }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }}{gateway_tls} }}\n",
        port + 1
    )
}

fn mkfifo(path: &std::path::Path) {
    let made = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success());
}

#[test]
fn a_fifo_named_by_the_configuration_is_refused_at_once_and_frees_the_reload_slot() {
    let port = ports(2);
    let proxy = Proxy::start(&config(port, ""));
    mkfifo(&proxy.dir().join("fifo.pem"));
    let started = Instant::now();
    let refused = proxy.reload(&config(
        port,
        ", tls: { certFile: fifo.pem, keyFile: fifo.pem }",
    ));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "validation blocked on the FIFO"
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body.contains("not a regular file"),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("fifo.pem"), "{}", refused.body);
    // The reload slot is free again: the next reload applies.
    let next = proxy.reload(&config(port, "").replace("localhost", "proxy.local"));
    assert_eq!(next.status, 200, "{}", next.body);
    // `check` ends too, with exit status 1 and the path.
    let file = proxy.dir().join("fifo.yaml");
    std::fs::write(
        &file,
        config(port, ", tls: { certFile: fifo.pem, keyFile: fifo.pem }")
            .replace("{admin}", "127.0.0.1:1"),
    )
    .expect("write");
    let mut check = Command::new(bin("sluice-proxy"))
        .arg("check")
        .arg(&file)
        .spawn()
        .expect("check");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = check.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = check.kill();
            panic!("sluice-proxy check blocked on the FIFO");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1));
}

#[test]
fn watcher_intervals_of_zero_are_usage_errors_with_a_message() {
    for (flag, value) in [
        ("--poll-interval", "0"),
        ("--resync", "0s"),
        ("--peer-timeout", "0s"),
    ] {
        let out = Command::new(bin("sluice-watcher"))
            .args(["--path", "/nonexistent/proxy.yaml", flag, value])
            .output()
            .expect("run sluice-watcher");
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag), "{flag}: {stderr}");
    }
    // Zero stays valid where it means "no delay".
    let out = Command::new(bin("sluice-watcher"))
        .args([
            "--stagger",
            "0s",
            "--jitter",
            "0s",
            "--canary-soak",
            "0s",
            "--help",
        ])
        .output()
        .expect("run sluice-watcher");
    assert_eq!(out.status.code(), Some(0));
}
