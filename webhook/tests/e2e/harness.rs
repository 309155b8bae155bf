//! Test harness: a CA and leaf certificates, the webhook as a child process
//! (awaited by its "webhook ready" log line, killed by PID on drop), and
//! clients that trust the CA.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SerialNumber,
};
use serde_json::Value;

/// The repository root.
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// An AdmissionReview fixture's bytes.
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = repo().join("tests/fixtures/admission").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An AdmissionReview fixture, parsed.
pub(crate) fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).expect("fixture is JSON")
}

/// A test CA that signs server certificates for 127.0.0.1 and localhost.
pub(crate) struct Ca {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate, PEM.
    pub(crate) pem: String,
}

/// A server certificate and its key, PEM.
pub(crate) struct Leaf {
    /// Certificate.
    pub(crate) cert: String,
    /// Private key.
    pub(crate) key: String,
}

impl Ca {
    /// A new CA.
    pub(crate) fn new() -> Ca {
        let key = KeyPair::generate().expect("ca key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "sluice-webhook test CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).expect("ca cert");
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate with this serial number.
    pub(crate) fn leaf(&self, serial: u64) -> Leaf {
        let key = KeyPair::generate().expect("leaf key");
        let mut params = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("leaf params");
        params
            .distinguished_name
            .push(DnType::CommonName, "sluice-webhook.kafka-proxy.svc");
        params.serial_number = Some(SerialNumber::from(serial));
        let cert = params.signed_by(&key, &self.issuer).expect("leaf cert");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// A CA and a server pair written to a temporary directory.
pub(crate) struct Pki {
    /// The CA.
    pub(crate) ca: Ca,
    /// The server certificate file.
    pub(crate) cert: PathBuf,
    /// Its key file.
    pub(crate) key: PathBuf,
    _dir: tempfile::TempDir,
}

impl Pki {
    /// A CA and a pair with serial 1.
    pub(crate) fn new() -> Pki {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = Ca::new();
        let leaf = ca.leaf(1);
        let cert = dir.path().join("tls.crt");
        let key = dir.path().join("tls.key");
        std::fs::write(&cert, &leaf.cert).expect("write cert");
        std::fs::write(&key, &leaf.key).expect("write key");
        Pki {
            ca,
            cert,
            key,
            _dir: dir,
        }
    }
}

/// Lines the child wrote to stderr.
#[derive(Default)]
struct Logs {
    lines: Mutex<Vec<String>>,
    changed: Condvar,
}

/// A running `sluice-webhook`. Dropping it kills the process by its PID
/// (only this guard knows it) and waits for it.
pub(crate) struct Webhook {
    child: Child,
    logs: Arc<Logs>,
    /// The HTTPS address it bound (port 0 in the command line).
    pub(crate) addr: SocketAddr,
    /// The plain-HTTP metrics address, when asked for.
    pub(crate) metrics_addr: Option<SocketAddr>,
    /// A client trusting the test CA.
    pub(crate) client: reqwest::Client,
}

impl Webhook {
    /// The process's resident memory, in KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }
}

impl Webhook {
    /// Starts the binary on 127.0.0.1:0 with this certificate and `extra`
    /// arguments, and waits for it to be ready.
    pub(crate) fn start(cert: &Path, key: &Path, ca_pem: &str, extra: &[&str]) -> Webhook {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice-webhook"));
        cmd.args([
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--tls-cert",
        ])
        .arg(cert)
        .arg("--tls-key")
        .arg(key)
        .args(extra)
        .env_remove("SLUICE_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start sluice-webhook");
        let logs = Arc::new(Logs::default());
        let stderr = child.stderr.take().expect("stderr is piped");
        let pump = Arc::clone(&logs);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                pump.lines.lock().expect("logs").push(line);
                pump.changed.notify_all();
            }
        });
        let mut webhook = Webhook {
            child,
            logs,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics_addr: None,
            client: client(ca_pem),
        };
        let ready = webhook.wait_for("webhook ready", Duration::from_secs(20));
        webhook.addr = ready["addr"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .expect("ready line names the address");
        webhook.metrics_addr = ready["metrics_addr"].as_str().and_then(|a| a.parse().ok());
        webhook
    }

    /// `https://127.0.0.1:PORT/path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// Posts an AdmissionReview body as the API server does.
    pub(crate) async fn review(&self, body: Vec<u8>) -> (u16, Value) {
        self.post(body, "application/json").await
    }

    /// Posts a body with any content type to `/validate`.
    pub(crate) async fn post(&self, body: Vec<u8>, content_type: &str) -> (u16, Value) {
        let response = self
            .client
            .post(self.url("/validate"))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("request reaches the webhook");
        let status = response.status().as_u16();
        let value = response.json().await.expect("answer is JSON");
        (status, value)
    }

    /// GETs a path over HTTPS, returning status and body text.
    pub(crate) async fn get(&self, path: &str) -> (u16, String) {
        let response = self
            .client
            .get(self.url(path))
            .send()
            .await
            .expect("request reaches the webhook");
        let status = response.status().as_u16();
        (status, response.text().await.expect("body"))
    }

    /// Waits for a JSON log line whose message contains `needle`; returns it.
    pub(crate) fn wait_for(&mut self, needle: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        let mut seen = 0;
        loop {
            {
                let lines = self.logs.lines.lock().expect("logs");
                for line in &lines[seen..] {
                    let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                    if v["message"].as_str().is_some_and(|m| m.contains(needle)) {
                        return v;
                    }
                }
                seen = lines.len();
                assert!(
                    Instant::now() < deadline,
                    "no log line {needle:?} within {timeout:?}:\n{}",
                    lines.join("\n")
                );
                let wait = deadline
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(100));
                drop(self.logs.changed.wait_timeout(lines, wait).expect("logs"));
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                std::thread::sleep(Duration::from_millis(50));
                panic!(
                    "sluice-webhook exited ({status}) before logging {needle:?}:\n{}",
                    self.logs.lines.lock().expect("logs").join("\n")
                );
            }
        }
    }

    /// Fails on any WARN or ERROR log line whose message does not contain
    /// one of `expected`.
    pub(crate) fn assert_clean_logs(&self, expected: &[&str]) {
        let lines = self.logs.lines.lock().expect("logs");
        for line in lines.iter() {
            let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            let level = v["level"].as_str().unwrap_or("?");
            let message = v["message"].as_str().unwrap_or(line);
            if matches!(level, "WARN" | "ERROR") && !expected.iter().any(|e| message.contains(e)) {
                panic!("unexpected {level} log line: {line}");
            }
        }
    }

    /// Sends SIGTERM and waits for the exit, at most `timeout`.
    pub(crate) fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM {}", self.child.id());
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "no exit within {timeout:?} of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// ring as the process's crypto provider: the workspace's one provider.
pub(crate) fn install_ring() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A raw TLS connection to `addr`, trusting only `ca_pem`: for tests that
/// write bytes no HTTP client would.
pub(crate) async fn tls_connect(
    addr: SocketAddr,
    ca_pem: &str,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    use rustls_pki_types::pem::PemObject;
    install_ring();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls_pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("CA PEM"))
        .expect("CA");
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").expect("server name");
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("handshake")
}

/// A reqwest client that trusts only `ca_pem`.
pub(crate) fn client(ca_pem: &str) -> reqwest::Client {
    install_ring();
    reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("CA PEM")])
        .https_only(true)
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client")
}

/// A review fixture with `proxy.yaml` replaced by `yaml` (in `binaryData`
/// when it is not UTF-8, as `kubectl create configmap --from-file` does).
pub(crate) fn review_with(yaml: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    let mut review = fixture_json("valid-create.json");
    let object = &mut review["request"]["object"];
    match std::str::from_utf8(yaml) {
        Ok(text) => object["data"]["proxy.yaml"] = Value::from(text),
        Err(_) => {
            object.as_object_mut().expect("object").remove("data");
            object["binaryData"] = serde_json::json!({
                "proxy.yaml": base64::engine::general_purpose::STANDARD.encode(yaml)
            });
        }
    }
    serde_json::to_vec(&review).expect("json")
}
