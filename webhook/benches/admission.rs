//! Admissions per second and admission latency of the real `sluice-webhook`
//! binary over real TLS with keep-alive: two client connections, each
//! sending requests one after another as the API server does, for 1 KB and
//! 100 KB configurations, repeated with the cases interleaved. Each case is
//! reported against a baseline of `GET /healthz` on the same connections,
//! so the ratios say what reading, parsing and validating a review costs on
//! top of TLS and HTTP.
//!
//! `cargo bench -p sluice-webhook --bench admission` (or `scripts/bench`,
//! which gathers the `BENCH` lines into its table; `SLUICE_BENCH_QUICK=1`
//! measures less).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use sluice_testkit::certs::Ca;
use sluice_testkit::process::Proc;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

const WARMUP: usize = 30;
/// Requests per connection per repetition of a case.
const ROUNDS: usize = 300;
/// Client connections, each sending its requests one after another.
const CONNECTIONS: usize = 2;

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(bench())
}

async fn bench() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let ca = Ca::new("sluice-webhook bench CA");
    let leaf = ca.sign(&["127.0.0.1"], "sluice-webhook", None);
    let (cert_path, key_path) = leaf.write(dir.path(), "tls.crt", "tls.key");

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice-webhook"));
    cmd.args([
        "--listen",
        "127.0.0.1:0",
        "--log-format",
        "json",
        "--tls-cert",
    ])
    .arg(&cert_path)
    .arg("--tls-key")
    .arg(&key_path)
    // The per-admission log line is not what is measured; the ready line
    // (from `run`) is needed.
    .env("SLUICE_LOG", "warn,sluice_webhook::run=info");
    // Killed by PID when dropped, at the end of the bench.
    let mut server = Proc::spawn("sluice-webhook", cmd);
    let addr = ready_address(&mut server)?;

    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca.pem.as_bytes())?)?;
    let config = Arc::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let mut senders = Vec::new();
    for _ in 0..CONNECTIONS {
        senders.push(connect(&addr, Arc::clone(&config)).await?);
    }

    let (small, large) = (config_of_size(1024), config_of_size(100 * 1024));
    let cases = [
        ("GET /healthz (baseline)", None),
        ("CREATE, 1 KB config", Some(review(&small, false))),
        ("UPDATE, 1 KB config", Some(review(&small, true))),
        ("CREATE, 100 KB config", Some(review(&large, false))),
        ("UPDATE, 100 KB config", Some(review(&large, true))),
    ];
    for (_, body) in cases.iter().skip(1) {
        let body = body.as_ref().map(|(b, _)| b.clone()).unwrap_or_default();
        let answer: Value = serde_json::from_slice(&send(&mut senders[0], post(body)?).await?)?;
        anyhow::ensure!(
            answer["response"]["allowed"] == true,
            "not allowed: {answer}"
        );
    }
    let reps = if std::env::var_os("SLUICE_BENCH_QUICK").is_some() {
        2
    } else {
        5
    };
    // Per case: one (p50, p99, requests per second) per repetition.
    let mut runs = vec![Vec::new(); cases.len()];
    for _ in 0..reps {
        for (i, (_, body)) in cases.iter().enumerate() {
            let body = body.as_ref().map(|(b, _)| b.clone());
            runs[i].push(measure(&mut senders, body).await?);
        }
    }
    report(
        &cases.map(|(name, body)| (name, body.map_or(0, |b| b.1))),
        &runs,
    );
    Ok(())
}

async fn connect(addr: &str, config: Arc<rustls::ClientConfig>) -> anyhow::Result<Sender> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let tls = TlsConnector::from(config)
        .connect(ServerName::try_from("127.0.0.1")?, tcp)
        .await?;
    let (sender, conn) = http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

fn healthz() -> Result<hyper::Request<Full<Bytes>>, hyper::http::Error> {
    hyper::Request::get("/healthz")
        .header("host", "127.0.0.1")
        .body(Full::new(Bytes::new()))
}

fn post(body: Bytes) -> Result<hyper::Request<Full<Bytes>>, hyper::http::Error> {
    hyper::Request::post("/validate")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Full::new(body))
}

type Run = (Duration, Duration, f64);

/// One figure of a run (p50, p99 or rate).
type Figure<'a> = dyn Fn(&Run) -> f64 + 'a;

/// Prints the table, and every figure as a `BENCH` line for `scripts/bench`.
fn report(cases: &[(&str, usize)], runs: &[Vec<Run>]) {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let mid = v.len() / 2;
        let m = if v.len().is_multiple_of(2) {
            (v[mid - 1] + v[mid]) / 2.0
        } else {
            v[mid]
        };
        (m, v[0], v[v.len() - 1])
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let column = |i: usize, f: &dyn Fn(&Run) -> f64| runs[i].iter().map(f).collect::<Vec<f64>>();
    let figures: [(&str, &str, &Figure<'_>); 3] = [
        ("p50", "ms", &|r| ms(r.0)),
        ("p99", "ms", &|r| ms(r.1)),
        ("admissions/s", "1/s", &|r| r.2),
    ];
    println!(
        "admissions over TLS, keep-alive, {CONNECTIONS} connections x {ROUNDS} requests, {} repetitions",
        runs[0].len()
    );
    for (i, (name, yaml_len)) in cases.iter().enumerate().skip(1) {
        for (what, unit, f) in figures {
            let (values, base) = (column(i, f), column(0, f));
            let ratios = values.iter().zip(&base).map(|(v, b)| v / b).collect();
            let ((m, lo, hi), (bm, ..), (r, rlo, rhi)) =
                (median(values.clone()), median(base.clone()), median(ratios));
            let target = match (what, *yaml_len > 50_000) {
                ("p99", true) => {
                    Some(serde_json::json!({"of": "median", "max": 5.0, "text": "<= 5 ms"}))
                }
                ("admissions/s", _) => {
                    Some(serde_json::json!({"of": "median", "min": 2000.0, "text": ">= 2,000/s"}))
                }
                _ => None,
            };
            let case = format!("{name} ({yaml_len} B): {what}");
            println!(
                "{case:<40} {m:>10.3} {unit:<4} [{lo:.3} – {hi:.3}]  {r:>6.2}x /healthz ({bm:.3})"
            );
            let mut record = json!({
                "section": "webhook", "case": case, "unit": unit, "median": m, "lo": lo, "hi": hi,
                "spread": "min-max", "n": values.len(), "values": values,
                "baseline": "GET /healthz", "baseline_median": bm, "ratio": r, "ratio_lo": rlo, "ratio_hi": rhi,
            });
            if let Some(t) = target {
                record["target"] = t;
            }
            println!("BENCH {record}");
        }
    }
}

/// The address from the "webhook ready" log line.
fn ready_address(server: &mut Proc) -> anyhow::Result<String> {
    let message = |line: &str| {
        let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        v["message"] == "webhook ready"
    };
    let line = server.wait_until("\"webhook ready\"", message, Duration::from_secs(20));
    let v: Value = serde_json::from_str(&line)?;
    let addr = v["addr"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no addr: {line}"))?;
    Ok(addr.to_owned())
}

type Sender = http1::SendRequest<Full<Bytes>>;

async fn send(sender: &mut Sender, req: hyper::Request<Full<Bytes>>) -> anyhow::Result<Bytes> {
    sender.ready().await?;
    let response = sender.send_request(req).await?;
    anyhow::ensure!(response.status() == 200, "status {}", response.status());
    Ok(response.into_body().collect().await?.to_bytes())
}

/// `WARMUP` then `ROUNDS` requests on every connection at once (each one
/// after another): p50, p99 and requests per second over all of them.
async fn measure(senders: &mut [Sender], body: Option<Bytes>) -> anyhow::Result<Run> {
    let request = || match &body {
        Some(b) => post(b.clone()),
        None => healthz(),
    };
    for sender in senders.iter_mut() {
        for _ in 0..WARMUP {
            send(sender, request()?).await?;
        }
    }
    let started = Instant::now();
    let mut all = Vec::with_capacity(CONNECTIONS * ROUNDS);
    let mut tasks = Vec::new();
    for sender in senders.iter_mut() {
        tasks.push(async {
            let mut samples = Vec::with_capacity(ROUNDS);
            for _ in 0..ROUNDS {
                let r = request()?;
                let t = Instant::now();
                send(sender, r).await?;
                samples.push(t.elapsed());
            }
            anyhow::Ok(samples)
        });
    }
    let mut rest = tasks.into_iter();
    let (a, b) = match (rest.next(), rest.next()) {
        (Some(a), Some(b)) => tokio::join!(a, b),
        _ => anyhow::bail!("{CONNECTIONS} connections expected"),
    };
    let elapsed = started.elapsed();
    all.extend(a?);
    all.extend(b?);
    all.sort();
    let rate = (CONNECTIONS * ROUNDS) as f64 / elapsed.as_secs_f64();
    Ok((percentile(&all, 50), percentile(&all, 99), rate))
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let i = (sorted.len() * p / 100).min(sorted.len().saturating_sub(1));
    sorted[i]
}

/// A valid configuration of about `size` bytes: clusters until it is reached.
fn config_of_size(size: usize) -> String {
    let mut yaml = String::from("drainTimeout: 20s\nvirtualClusters:\n");
    let mut i = 0;
    while yaml.len() < size {
        yaml.push_str(&format!(
            "  - name: cluster-{i:04}
    upstream:
      bootstrapServers: [kafka-0.kafka-{i}.svc:9092, kafka-1.kafka-{i}.svc:9092]
    gateway:
      advertisedHost: cluster-{i}.kafka-proxy.svc
      bootstrapPort: {}
      brokerPorts: {{ start: {}, count: 8 }}
    filters:
      - type: deny-apis
        config: {{ apis: [DeleteTopics, DeleteRecords] }}
",
            10_000 + i * 10,
            10_001 + i * 10
        ));
        i += 1;
    }
    yaml
}

/// A review as the API server sends it. An UPDATE carries object and
/// oldObject; the old one differs (the first cluster's upstream) and was
/// never admitted by this webhook, so both configurations are validated and
/// diffed: the most work a review does. (An old configuration this replica
/// admitted lately, or the same bytes, is not validated again.)
fn review(yaml: &str, update: bool) -> (Bytes, usize) {
    let old_yaml = yaml.replacen("kafka-0.", "kafka-9.", 1);
    assert_ne!(old_yaml, yaml);
    let object = |rv: &str, yaml: &str| {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "sluice-proxy", "namespace": "kafka-proxy", "resourceVersion": rv,
                          "labels": { "sluice.dev/proxy-config": "true" } },
            "data": { "proxy.yaml": yaml }
        })
    };
    let (operation, old) = if update {
        ("UPDATE", object("1", &old_yaml))
    } else {
        ("CREATE", Value::Null)
    };
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "0b5f4c1e-7a2d-4e3b-9c8f-1d2e3f4a5b6c",
            "kind": { "group": "", "version": "v1", "kind": "ConfigMap" },
            "resource": { "group": "", "version": "v1", "resource": "configmaps" },
            "name": "sluice-proxy", "namespace": "kafka-proxy", "operation": operation,
            "userInfo": { "username": "kubernetes-admin" },
            "object": object("2", yaml), "oldObject": old, "dryRun": false
        }
    });
    (Bytes::from(review.to_string()), yaml.len())
}
