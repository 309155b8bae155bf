//! Test harness: the webhook as a child process (the kit's [`Proc`],
//! awaited by its "webhook ready" log line, killed by PID on drop), its
//! certificates (the kit's CA), and clients that trust the CA.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sluice_testkit::certs::{Ca, Leaf};
use sluice_testkit::process::Proc;
use sluice_testkit::{bin, repo};

/// An AdmissionReview fixture's bytes.
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = repo().join("tests/fixtures/admission").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An AdmissionReview fixture, parsed.
pub(crate) fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).expect("fixture is JSON")
}

/// A test CA for the webhook's certificates.
pub(crate) fn new_ca() -> Ca {
    Ca::new("sluice-webhook test CA")
}

/// A server certificate for 127.0.0.1 and localhost with this serial number.
pub(crate) fn leaf(ca: &Ca, serial: u64) -> Leaf {
    ca.server("sluice-webhook.kafka-proxy.svc", serial)
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
        let ca = new_ca();
        let (cert, key) = leaf(&ca, 1).write(dir.path(), "tls.crt", "tls.key");
        Pki {
            ca,
            cert,
            key,
            _dir: dir,
        }
    }
}

/// The `message` of a JSON log line (empty when it is not one).
fn message(line: &str) -> String {
    let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
    v["message"].as_str().unwrap_or_default().to_owned()
}

/// A running `sluice-webhook`, killed by PID when dropped.
pub(crate) struct Webhook {
    proc: Proc,
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
        self.proc.rss_kib()
    }

    /// Starts the binary on 127.0.0.1:0 with this certificate and `extra`
    /// arguments, and waits for it to be ready.
    pub(crate) fn start(cert: &Path, key: &Path, ca_pem: &str, extra: &[&str]) -> Webhook {
        let mut cmd = Command::new(bin("sluice-webhook"));
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
        .env_remove("SLUICE_LOG");
        let mut webhook = Webhook {
            proc: Proc::spawn("sluice-webhook", cmd),
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
        let line = self.proc.wait_until(
            &format!("with a message containing {needle:?}"),
            |l| message(l).contains(needle),
            timeout,
        );
        serde_json::from_str(&line).expect("a JSON log line")
    }

    /// Fails on any WARN or ERROR log line whose message does not contain
    /// one of `expected`.
    pub(crate) fn assert_clean_logs(&self, expected: &[&str]) {
        for line in self.proc.lines() {
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let level = v["level"].as_str().unwrap_or("?");
            let message = v["message"].as_str().unwrap_or(&line);
            if matches!(level, "WARN" | "ERROR") && !expected.iter().any(|e| message.contains(e)) {
                panic!("unexpected {level} log line: {line}");
            }
        }
    }

    /// Sends SIGTERM and waits for the exit, at most `timeout`.
    pub(crate) fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        self.proc.stop("TERM", timeout)
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        // A failing test shows what the process said.
        if std::thread::panicking() {
            eprintln!("--- webhook log ---\n{}", self.proc.lines().join("\n"));
        }
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
