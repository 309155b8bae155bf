//! The proxy's memory under the two loads of issue 15, measured as the
//! kernel sees it (RSS of the `sluice-proxy` process), with tansu behind it:
//!
//! - a client pipelines denied requests behind one the broker holds (a Fetch
//!   waiting for data) and never reads the answers, trying to send 300 MB,
//!   while a second client produces and consumes on the same cluster;
//! - ten consumers catch up on 50 MB each with `fetch.max.bytes` of 50 MiB,
//!   then stay connected and idle;
//! - a client pipelines requests whose answers the proxy holds (Metadata, to
//!   rewrite) and never reads them, while a second client keeps working.
//!
//! Each prints its figures (`memory:` lines) for docs/reliability.md. They
//! run against whatever binary `bin("sluice-proxy")` finds, so the same test
//! measures an older build: `CARGO_TARGET_DIR` pointing at its target
//! directory (the configuration uses no key an older build lacks).

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, DeleteTopicsRequest, FetchRequest, MetadataRequest, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::tansu_cluster;
use sluice_tests::peers::Tansu;
use sluice_tests::python::{self, Steady};

const MIB: u64 = 1024 * 1024;

fn proxy_for(tansu: &Tansu, base: u16, extra: &str) -> Proxy {
    Proxy::start(&format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n{}",
        tansu_cluster("mem", &tansu.addr, base, extra)
    ))
}

fn rss(proxy: &mut Proxy) -> u64 {
    proxy.process().rss_kib() * 1024
}

fn frame<T: Encodable>(api: ApiKey, version: i16, correlation_id: i32, body: &T) -> Vec<u8> {
    sluice_kafka::encode::request(api, version, correlation_id, "attacker", body)
        .expect("an encodable request")
        .to_vec()
}

/// A Fetch the broker holds for a minute: nothing arrives on `topic`.
fn long_poll(topic: &str) -> Vec<u8> {
    let mut partition = FetchPartition::default();
    partition.partition = 0;
    partition.fetch_offset = 0;
    partition.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_string(topic.to_owned()));
    t.partitions = vec![partition];
    let mut body = FetchRequest::default();
    body.replica_id = (-1).into();
    body.max_wait_ms = 60_000;
    body.min_bytes = 1 << 30;
    body.max_bytes = 1 << 20;
    body.topics = vec![t];
    frame(ApiKey::Fetch, 12, 0, &body)
}

/// 1 MiB or so of small DeleteTopics requests, whole frames.
fn denied_requests() -> Vec<u8> {
    let mut body = DeleteTopicsRequest::default();
    body.topic_names = vec![TopicName(StrBytes::from_static_str("steady"))];
    body.timeout_ms = 1000;
    let mut out = Vec::with_capacity(1 << 20);
    let mut id = 1;
    while out.len() < 1 << 20 {
        out.extend_from_slice(&frame(ApiKey::DeleteTopics, 4, id, &body));
        id += 1;
    }
    out
}

#[test]
fn pipelined_denied_requests_leave_the_proxy_small_and_other_clients_unharmed() {
    let tansu = Tansu::start();
    tansu.create_topic("steady", 1);
    tansu.create_topic("idle", 1);
    let base = ports(2);
    let deny = "    filters:\n      - type: deny-apis\n        config: { apis: [DeleteTopics] }\n";
    let mut proxy = proxy_for(&tansu, base, deny);
    let bootstrap = format!("127.0.0.1:{base}");
    let clients = Steady::start(&bootstrap, "steady", "steady-group", false);
    std::thread::sleep(Duration::from_secs(1));
    let before = rss(&mut proxy);

    let mut attacker = TcpStream::connect(&bootstrap).unwrap();
    attacker.write_all(&long_poll("idle")).unwrap();
    attacker
        .set_write_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let burst = denied_requests();
    let (goal, deadline) = (300 * MIB, Instant::now() + Duration::from_secs(20));
    let (mut sent, mut at, mut peak) = (0u64, 0usize, before);
    let mut last_sample = Instant::now();
    while sent < goal && Instant::now() < deadline {
        match attacker.write(&burst[at..]) {
            Ok(n) => {
                sent += n as u64;
                at = (at + n) % burst.len();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => {
                eprintln!("memory: the attacker's connection ended: {e}");
                break;
            }
        }
        if last_sample.elapsed() >= Duration::from_millis(100) {
            peak = peak.max(rss(&mut proxy));
            last_sample = Instant::now();
        }
    }
    peak = peak.max(rss(&mut proxy));
    let report = clients.finish();
    eprintln!(
        "memory: attack: sent {} MB in {:?}; proxy RSS {} MiB before, {} MiB at most",
        sent / 1_000_000,
        Duration::from_secs(20).saturating_sub(deadline.saturating_duration_since(Instant::now())),
        before / MIB,
        peak / MIB
    );
    assert!(
        peak <= before + 64 * MIB,
        "the proxy grew from {} to {} MiB under the attack",
        before / MIB,
        peak / MIB
    );
    assert!(
        sent < goal,
        "the attacker sent {} MB without being throttled",
        sent / 1_000_000
    );
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["lost"], 0, "{report}");
    assert!(report["acked"].as_u64().unwrap() > 100, "{report}");
    drop(attacker);
    proxy.assert_clean_logs();
}

/// With `SLUICE_MEMORY_DEBUG` set: the proxy's mappings over 1 MiB of RSS
/// and its buffer metrics, to tell heap from mapped memory.
fn debug_dump(proxy: &Proxy) {
    if std::env::var_os("SLUICE_MEMORY_DEBUG").is_none() {
        return;
    }
    let smaps = std::fs::read_to_string(format!("/proc/{}/smaps", proxy.pid())).unwrap();
    let mut region = "";
    for l in smaps.lines() {
        if l.starts_with(|c: char| c.is_ascii_hexdigit()) && l.contains('-') {
            region = l;
        } else if let Some(kb) = l.strip_prefix("Rss:") {
            let kb: u64 = kb.trim().trim_end_matches("kB").trim().parse().unwrap();
            if kb > 1024 {
                eprintln!("memory-debug: {kb} kB {region}");
            }
        }
    }
    let metrics = proxy.get("/metrics").body;
    for l in metrics.lines().filter(|l| {
        [
            "sluice_buffered",
            "sluice_rewrites_total",
            "sluice_requests_total",
        ]
        .iter()
        .any(|m| l.starts_with(m))
    }) {
        eprintln!("memory-debug: {l}");
    }
}

/// A `catch_up.py read` client: reports once it has read, then idles.
struct Reader {
    child: Child,
    report: serde_json::Value,
}

impl Drop for Reader {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn read_and_idle(bootstrap: &str, topic: &str, mb: u64) -> Child {
    let mut cmd = python::command("catch_up.py");
    cmd.args(["read", bootstrap, topic, &mb.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd.spawn().expect("start catch_up.py read")
}

fn report_of(mut child: Child) -> Reader {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("read report");
    let report = serde_json::from_str(&line)
        .unwrap_or_else(|_| panic!("catch_up.py read printed no report: {line:?}"));
    Reader { child, report }
}

#[test]
fn consumers_that_caught_up_and_idle_leave_the_proxy_as_small_as_before() {
    const CONSUMERS: usize = 10;
    const MB: u64 = 50;
    let tansu = Tansu::start();
    tansu.create_topic("backlog", 1);
    let filled = python::run_json(
        "catch_up.py",
        &["fill", &tansu.addr, "backlog", &(MB + 2).to_string()],
        Duration::from_secs(120),
    );
    assert_eq!(
        filled["errors"].as_array().map(Vec::len),
        Some(0),
        "{filled}"
    );
    let base = ports(2);
    let mut proxy = proxy_for(&tansu, base, "");
    let bootstrap = format!("127.0.0.1:{base}");
    std::thread::sleep(Duration::from_secs(1));
    let before = rss(&mut proxy);

    let children: Vec<Child> = (0..CONSUMERS)
        .map(|_| read_and_idle(&bootstrap, "backlog", MB))
        .collect();
    let readers: Vec<Reader> = children.into_iter().map(report_of).collect();
    for r in &readers {
        assert!(
            r.report["bytes"].as_u64().unwrap() >= MB * MIB,
            "{}",
            r.report
        );
        assert_eq!(
            r.report["errors"].as_array().map(Vec::len),
            Some(0),
            "{}",
            r.report
        );
    }
    let busy = rss(&mut proxy);
    // Idle now: what the proxy still holds should go within seconds.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut idle = rss(&mut proxy);
    while idle > before + 10 * MIB && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        idle = rss(&mut proxy);
    }
    debug_dump(&proxy);
    eprintln!(
        "memory: {CONSUMERS} consumers read {MB} MB each; proxy RSS {} MiB before, {} MiB at most, {} MiB as they finished, {} MiB idle",
        before / MIB,
        proxy.peak_rss() / MIB,
        busy / MIB,
        idle / MIB
    );
    assert!(
        idle <= before + 10 * MIB,
        "{CONSUMERS} idle consumers keep the proxy at {} MiB (from {} MiB)",
        idle / MIB,
        before / MIB
    );
    drop(readers);
    proxy.assert_clean_logs();
}

/// What the proxy holds for frames now (`sluice_buffered_bytes`).
fn buffered(proxy: &Proxy) -> f64 {
    proxy.metric("sluice_buffered_bytes")
}

#[test]
fn a_client_that_never_reads_is_closed_and_its_memory_returned() {
    let tansu = Tansu::start();
    tansu.create_topic("steady", 1);
    // Metadata answers of a few KiB: the socket buffers fill in seconds.
    tansu.create_topic("wide", 256);
    let base = ports(2);
    let proxy = proxy_for(&tansu, base, "    limits: { frameTimeout: 2s }\n");
    let bootstrap = format!("127.0.0.1:{base}");
    let baseline = buffered(&proxy);
    let clients = Steady::start(&bootstrap, "steady", "steady-group", false);

    // Metadata requests, each answered with a response the proxy holds
    // whole to rewrite, sent until the proxy closes the connection; never a
    // byte read. Once the socket buffers are full, the proxy's write waits,
    // its in-flight slots fill and it stops reading the requests.
    let mut attacker = TcpStream::connect(&bootstrap).unwrap();
    attacker
        .set_write_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut all_topics = MetadataRequest::default();
    all_topics.topics = None;
    let burst: Vec<u8> = (1..=1000)
        .flat_map(|id| frame(ApiKey::Metadata, 1, id, &all_topics))
        .collect();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(60);
    let (mut at, mut stuck) = (0, false);
    let closed = loop {
        assert!(
            Instant::now() < deadline,
            "a client that reads nothing kept its connection for 60 s"
        );
        match attacker.write(&burst[at..]) {
            Ok(n) => at = (at + n) % burst.len(),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                // The proxy stopped reading: what it holds for this client
                // is charged while it waits.
                stuck = stuck || buffered(&proxy) > baseline;
            }
            Err(e) => break e,
        }
    };
    eprintln!(
        "memory: the non-reading client's connection ended after {:?}: {closed}",
        started.elapsed()
    );
    assert!(stuck, "the proxy never held bytes for the client");
    proxy.wait_for_metric(
        "sluice_connections_closed_on_error_total{cluster=\"mem\",reason=\"write_timeout\"}",
        1.0,
        Duration::from_secs(5),
    );
    let report = clients.finish();
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["lost"], 0, "{report}");
    assert!(report["acked"].as_u64().unwrap() > 100, "{report}");
    // Every connection is gone: the budget is back where it started.
    let deadline = Instant::now() + Duration::from_secs(10);
    while buffered(&proxy) != baseline {
        assert!(
            Instant::now() < deadline,
            "sluice_buffered_bytes is {}, was {baseline}",
            buffered(&proxy)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    proxy.assert_clean_logs();
}
