//! Admission latency of the real `sluice-webhook` binary over real TLS with
//! keep-alive: one connection, requests one after another, as the API
//! server sends them. Each case is reported against a baseline of
//! `GET /healthz` on the same connection, so the ratios say what reading,
//! parsing and validating a review costs on top of TLS and HTTP.
//!
//! `cargo bench -p sluice-webhook --bench admission`

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

const WARMUP: usize = 30;
const ROUNDS: usize = 400;

/// The webhook process, killed by PID on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(bench())
}

async fn bench() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate()?;
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])?.signed_by(&key, &issuer)?;
    let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert_path, leaf.pem())?;
    std::fs::write(&key_path, key.serialize_pem())?;

    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice-webhook"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--tls-cert",
        ])
        .arg(&cert_path)
        .arg("--tls-key")
        .arg(&key_path)
        // The per-admission log line is not what is measured; the ready
        // line (from `run`) is needed.
        .env("SLUICE_LOG", "warn,sluice_webhook::run=info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stderr"))?;
    let _server = Server(child);
    let addr = ready_address(stderr)?;

    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca.pem().as_bytes())?)?;
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(&addr).await?;
    tcp.set_nodelay(true)?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1")?, tcp)
        .await?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(conn);

    let (small, large) = (config_of_size(1024), config_of_size(100 * 1024));
    let cases = [
        ("CREATE, 1 KB config", review(&small, false)),
        ("UPDATE, 1 KB config", review(&small, true)),
        ("CREATE, 100 KB config", review(&large, false)),
        ("UPDATE, 100 KB config", review(&large, true)),
    ];
    let healthz = || {
        hyper::Request::get("/healthz")
            .header("host", "127.0.0.1")
            .body(Full::new(Bytes::new()))
    };
    let post = |body: &Bytes| {
        hyper::Request::post("/validate")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))
    };

    let mut rows = Vec::new();
    let baseline = measure(&mut sender, healthz).await?;
    rows.push(("GET /healthz (baseline)", 0, baseline.clone()));
    for (name, (body, yaml_len)) in &cases {
        let answer = send(&mut sender, post(body)?).await?;
        let answer: Value = serde_json::from_slice(&answer)?;
        anyhow::ensure!(
            answer["response"]["allowed"] == true,
            "not allowed: {answer}"
        );
        rows.push((*name, *yaml_len, measure(&mut sender, || post(body)).await?));
    }

    let (b50, b99) = (percentile(&baseline, 50), percentile(&baseline, 99));
    println!("admission latency over TLS, keep-alive, {ROUNDS} sequential requests per case");
    println!(
        "{:<26} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "case", "config", "p50", "p99", "p50 x", "p99 x"
    );
    for (name, yaml_len, samples) in &rows {
        let (p50, p99) = (percentile(samples, 50), percentile(samples, 99));
        println!(
            "{:<26} {:>10} {:>10} {:>10} {:>9.1} {:>9.1}",
            name,
            if *yaml_len == 0 {
                "-".to_owned()
            } else {
                format!("{yaml_len} B")
            },
            format!("{:.0} µs", p50.as_secs_f64() * 1e6),
            format!("{:.0} µs", p99.as_secs_f64() * 1e6),
            p50.as_secs_f64() / b50.as_secs_f64(),
            p99.as_secs_f64() / b99.as_secs_f64(),
        );
    }
    Ok(())
}

/// The address from the "webhook ready" log line.
fn ready_address(stderr: std::process::ChildStderr) -> anyhow::Result<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if v["message"] == "webhook ready" {
                let _ = tx.send(v["addr"].as_str().unwrap_or_default().to_owned());
            }
        }
    });
    Ok(rx.recv_timeout(Duration::from_secs(20))?)
}

type Sender = http1::SendRequest<Full<Bytes>>;

async fn send(sender: &mut Sender, req: hyper::Request<Full<Bytes>>) -> anyhow::Result<Bytes> {
    sender.ready().await?;
    let response = sender.send_request(req).await?;
    anyhow::ensure!(response.status() == 200, "status {}", response.status());
    Ok(response.into_body().collect().await?.to_bytes())
}

async fn measure(
    sender: &mut Sender,
    mut req: impl FnMut() -> Result<hyper::Request<Full<Bytes>>, hyper::http::Error>,
) -> anyhow::Result<Vec<Duration>> {
    for _ in 0..WARMUP {
        send(sender, req()?).await?;
    }
    let mut samples = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let r = req()?;
        let started = Instant::now();
        send(sender, r).await?;
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok(samples)
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
/// oldObject, so both configurations are validated and diffed: the most
/// work a review does.
fn review(yaml: &str, update: bool) -> (Bytes, usize) {
    let object = |rv: &str| {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "sluice-proxy", "namespace": "kafka-proxy", "resourceVersion": rv,
                          "labels": { "sluice.dev/proxy-config": "true" } },
            "data": { "proxy.yaml": yaml }
        })
    };
    let (operation, old) = if update {
        ("UPDATE", object("1"))
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
            "object": object("2"), "oldObject": old, "dryRun": false
        }
    });
    (Bytes::from(review.to_string()), yaml.len())
}
