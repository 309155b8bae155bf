//! What the API server does when it calls the webhook: a new TLS
//! connection that trusts exactly the caBundle of the moment, and a real
//! AdmissionReview posted over it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// An AdmissionReview fixture shared with the end-to-end tests.
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = sluice_testkit::repo()
        .join("tests/fixtures/admission")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// How long a connection and its handshake, or a request, may take: a
/// server that does not answer fails the attempt instead of hanging it.
const LIMIT: Duration = Duration::from_secs(5);

/// A TLS connection to `addr` (as 127.0.0.1) verified against `bundle`.
async fn connect(
    addr: SocketAddr,
    bundle: &str,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    tokio::time::timeout(LIMIT, connect_unbounded(addr, bundle))
        .await
        .map_err(|_| format!("no handshake within {LIMIT:?}"))?
}

async fn connect_unbounded(
    addr: SocketAddr,
    bundle: &str,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(bundle.as_bytes()) {
        roots
            .add(cert.map_err(|e| format!("caBundle: {e}"))?)
            .map_err(|e| format!("caBundle: {e}"))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(sluice_webhook::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let name = ServerName::try_from("127.0.0.1").expect("an IP address");
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))
}

/// The serial number and notAfter of the certificate a new handshake gets.
pub(crate) async fn served(addr: SocketAddr, bundle: &str) -> Result<(Vec<u8>, i64), String> {
    let tls = connect(addr, bundle).await?;
    let leaf = tls
        .get_ref()
        .1
        .peer_certificates()
        .ok_or("no certificate")?[0]
        .clone();
    let (_, cert) = x509_parser::parse_x509_certificate(&leaf).map_err(|e| e.to_string())?;
    Ok((
        cert.raw_serial().to_vec(),
        cert.validity().not_after.timestamp(),
    ))
}

/// One HTTP/1.1 request on a new verified connection: status and body.
pub(crate) async fn request(
    addr: SocketAddr,
    bundle: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> Result<(u16, String), String> {
    let mut tls = connect(addr, bundle).await?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: sluice-webhook.sluice-system.svc\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let io = |e: std::io::Error| e.to_string();
    tls.write_all(head.as_bytes()).await.map_err(io)?;
    tls.write_all(body).await.map_err(io)?;
    let mut raw = Vec::new();
    tokio::time::timeout(LIMIT, tls.read_to_end(&mut raw))
        .await
        .map_err(|_| format!("no answer within {LIMIT:?}"))?
        .map_err(io)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP head")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status")?;
    Ok((status, body.to_owned()))
}

/// Posts the valid CREATE review; fails unless it is allowed.
pub(crate) async fn review(addr: SocketAddr, bundle: &str) -> Result<(), String> {
    let (status, body) = request(
        addr,
        bundle,
        "POST",
        "/validate",
        &fixture("valid-create.json"),
    )
    .await?;
    let answer: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
    match (status, answer["response"]["allowed"].as_bool()) {
        (200, Some(true)) => Ok(()),
        _ => Err(format!("{status}: {body}")),
    }
}
