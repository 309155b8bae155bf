//! HTTPS on the admin listener (`admin.tls`, issue 30): the admin API is
//! served over TLS only (a plain HTTP request gets no HTTP answer), a
//! renewed certificate applied by a reload reaches new handshakes without a
//! restart, and the watcher validates and reloads against it with
//! `--proxy-ca`. Before, `admin.tls` was an unknown key and the watcher had
//! no `--proxy-ca`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use sluice_admin_api::{ConfigStatus, endpoints};
use sluice_testkit::certs::{Ca, Leaf};
use sluice_testkit::config::version;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_testkit::volume::Volume;
use sluice_testkit::watcher::Watcher;

/// A resync far beyond the test, so only the watched change can act.
const NO_RESYNC: [&str; 6] = ["--stagger", "0s", "--jitter", "0s", "--resync", "1h"];

/// One cluster; the admin API on HTTPS with `admin.crt`/`admin.key` in `dir`;
/// `n` changes a limit, so each `n` is a new version.
fn config(admin: &str, dir: &std::path::Path, port: u16, n: u32) -> String {
    format!(
        "admin:\n  listen: \"{admin}\"\n  tls: {{ certFile: {}, keyFile: {} }}\ndrainTimeout: 1s\nvirtualClusters:\n  - name: a\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n    limits: {{ maxConnections: {} }}\n    analysis: {{ frontDoor: {{ enabled: false }} }}\n",
        dir.join("admin.crt").display(),
        dir.join("admin.key").display(),
        port + 1,
        1000 + n
    )
}

fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).expect("PEM certificate")
}

/// Sends `request` over TLS trusting `ca` only; returns the answer and the
/// leaf certificate the server presented.
fn https(admin: &str, ca: &Ca, request: &str) -> (String, CertificateDer<'static>) {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der(&ca.pem)).expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let tls = rustls::ClientConnection::new(Arc::new(config), name).expect("client");
    let tcp = TcpStream::connect(admin).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut stream = rustls::StreamOwned::new(tls, tcp);
    stream.write_all(request.as_bytes()).expect("send over TLS");
    let mut answer = Vec::new();
    // The server closes after `Connection: close`; a missing close_notify is fine.
    let _ = stream.read_to_end(&mut answer);
    let leaf = stream.conn.peer_certificates().expect("a certificate")[0].clone();
    (String::from_utf8_lossy(&answer).into_owned(), leaf)
}

fn get(admin: &str, ca: &Ca, path: &str) -> (String, CertificateDer<'static>) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {admin}\r\nConnection: close\r\n\r\n");
    https(admin, ca, &request)
}

/// The version in force, read over HTTPS.
fn version_of(admin: &str, ca: &Ca) -> String {
    let (answer, _) = get(admin, ca, endpoints::STATUS);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let body = answer.split_once("\r\n\r\n").expect("a body").1;
    let status: ConfigStatus = serde_json::from_str(body).expect("status JSON");
    status.current_config_version.to_string()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A proxy serving its admin API with `leaf`.
fn start(leaf: &Leaf) -> (Proxy, u16) {
    let dir = tempfile::tempdir().expect("dir");
    leaf.write(dir.path(), "admin.crt", "admin.key");
    let port = ports(2);
    let text = config("{admin}", dir.path(), port, 0);
    (Proxy::start_in(dir, &text), port)
}

#[test]
fn the_admin_api_speaks_https_only_and_a_renewed_certificate_needs_no_restart() {
    let ca = Ca::new("admin CA");
    let (first, renewed) = (ca.server("admin 1", 1), ca.server("admin 2", 2));
    let (proxy, port) = start(&first);

    let (answer, leaf) = get(&proxy.admin, &ca, endpoints::HEALTH);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(leaf, der(&first.cert));

    // Plain HTTP gets no HTTP answer: the listener expects a TLS handshake.
    let mut plain = TcpStream::connect(&proxy.admin).expect("connect");
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    plain
        .write_all(b"GET /admin/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/"),
        "plain HTTP was answered: {}",
        String::from_utf8_lossy(&answer)
    );

    // Renew the pair in place and reload the same bytes: new handshakes get it.
    renewed.write(proxy.dir(), "admin.crt", "admin.key");
    let body = config(&proxy.admin, proxy.dir(), port, 0);
    let request = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/yaml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        endpoints::RELOAD,
        proxy.admin,
        body.len()
    );
    let (answer, _) = https(&proxy.admin, &ca, &request);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_, leaf) = get(&proxy.admin, &ca, endpoints::HEALTH);
    assert_eq!(
        leaf,
        der(&renewed.cert),
        "the renewed certificate is served"
    );
    proxy.assert_clean_logs();
}

#[test]
fn the_watcher_validates_and_reloads_over_https_with_proxy_ca() {
    let ca = Ca::new("admin CA");
    let (proxy, port) = start(&ca.server("admin", 1));
    let dir = tempfile::tempdir().expect("dir");
    let ca_file = dir.path().join("admin-ca.pem");
    std::fs::write(&ca_file, &ca.pem).expect("write CA");
    let text = |n| config(&proxy.admin, proxy.dir(), port, n);
    let volume_dir = dir.path().join("config");
    std::fs::create_dir(&volume_dir).expect("volume directory");
    let mut volume = Volume::create(&volume_dir, "proxy.yaml", text(0).as_bytes());
    let url = format!("https://{}", proxy.admin);
    let mut extra = NO_RESYNC.to_vec();
    let ca_arg = ca_file.display().to_string();
    extra.extend(["--proxy-ca", ca_arg.as_str()]);
    let watcher = Watcher::start_url(&volume.path(), &url, &extra);

    volume.swap(text(1).as_bytes());
    let want = version(&text(1));
    wait_for(
        "the watcher never applied the new version over HTTPS",
        || version_of(&proxy.admin, &ca) == want,
    );
    // The proxy runs the version before its answer reaches the watcher,
    // which counts the reload only then.
    wait_for("the watcher never counted the applied reload", || {
        watcher.metric("sluice_watcher_reloads_total{result=\"applied\"}") >= 1.0
    });
    proxy.assert_clean_logs();
}
