//! The files a configuration references, watched (the reload-edges and
//! certificate issues): a configuration rejected because its certificate was
//! missing is applied once the certificate appears, and a renewed
//! certificate in a Secret-style volume reaches new handshakes with the
//! configuration's bytes unchanged. Before, the watcher compared the
//! configuration's digest only: it remembered the rejected version forever
//! and never noticed a renewed certificate.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_testkit::certs::{Ca, Leaf};
use sluice_testkit::config::{version, watched};
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_testkit::volume::Volume;
use sluice_testkit::watcher::Watcher;
use sluice_tests::peers::{TANSU_NODE_ID, Tansu};
use sluice_tests::python::Steady;

/// A resync far beyond each test, so only watched changes can act.
pub(super) const NO_RESYNC: [&str; 6] = ["--stagger", "0s", "--jitter", "0s", "--resync", "1h"];

/// One cluster serving TLS with the pair in `secret`.
fn with_tls(admin: &str, port: u16, secret: &Volume) -> String {
    format!(
        "admin: {{ listen: \"{admin}\" }}\ndrainTimeout: 1s\nvirtualClusters:\n  - name: watched\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"], checkOnReload: false }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }}, tls: {{ certFile: {}, keyFile: {} }} }}\n",
        port + 1,
        secret.file("tls.crt").display(),
        secret.file("tls.key").display(),
    )
}

/// A new directory `name` in `dir`, for a volume.
pub(super) fn made(dir: &tempfile::TempDir, name: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::create_dir(&path).expect("volume directory");
    path
}

fn pair(leaf: &Leaf) -> [(&'static str, &[u8]); 2] {
    [
        ("tls.crt", leaf.cert.as_bytes()),
        ("tls.key", leaf.key.as_bytes()),
    ]
}

/// The serial number of the certificate the proxy presents on `port`
/// (verified against `ca` for `localhost`), as decimal text.
fn served_serial(port: u16, ca: &Ca) -> String {
    let mut roots = rustls::RootCertStore::empty();
    use rustls_pki_types::pem::PemObject;
    let ca_der = rustls_pki_types::CertificateDer::from_pem_slice(ca.pem.as_bytes()).expect("CA");
    roots.add(ca_der).expect("root");
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    let mut tls = rustls::ClientConnection::new(Arc::new(config), name).expect("client");
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    while tls.is_handshaking() {
        tls.complete_io(&mut tcp).expect("handshake");
    }
    let der = tls.peer_certificates().expect("a certificate")[0].clone();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).expect("x509");
    let _ = tcp.flush();
    let _ = tcp.read(&mut [0; 1]);
    cert.serial.to_string()
}

#[test]
fn a_configuration_rejected_for_a_missing_certificate_is_applied_once_it_appears() {
    let port = ports(2);
    let dir = tempfile::tempdir().expect("dir");
    let mut secret = Volume::create_files(&made(&dir, "secret"), &[("other", b"x")]);
    let mut proxy = Proxy::start(&watched("{admin}", port, 0));
    proxy.allow("No such file");
    proxy.allow("rejected");
    let first = proxy.render(&watched("{admin}", port, 0));
    let mut config = Volume::create(&made(&dir, "config"), "proxy.yaml", first.as_bytes());
    let mut watcher = Watcher::start(&config.path(), &proxy.admin, &NO_RESYNC);
    watcher.wait_for_log("watching configuration", Duration::from_secs(30));

    let tls = proxy.render(&with_tls("{admin}", port, &secret));
    config.swap(tls.as_bytes());
    watcher.wait_for_log("rejected", Duration::from_secs(30));
    assert_eq!(proxy.version(), version(&first));

    let ca = Ca::new("appears");
    secret.swap_files(&pair(&ca.server("late", 7)));
    proxy.wait_for_version(&version(&tls), Duration::from_secs(30));
    assert_eq!(served_serial(port, &ca), "7");
}

#[test]
fn a_renewed_certificate_reaches_new_handshakes_in_place_and_connected_clients_stay() {
    let tansu = Tansu::start();
    tansu.create_topic("renewed", 1);
    let port = ports(2);
    let dir = tempfile::tempdir().expect("dir");
    let ca = Ca::new("renewed");
    let ca_file = ca.write(dir.path(), "ca.pem");
    let mut secret = Volume::create_files(&made(&dir, "secret"), &pair(&ca.server("one", 1001)));
    let text = with_tls("{admin}", port, &secret)
        .replace("127.0.0.1:9", &tansu.addr)
        .replace(
            "count: 1 }",
            &format!("count: 1, firstNodeId: {TANSU_NODE_ID} }}"),
        );
    let mut proxy = Proxy::start(&text);
    // The bare handshakes below are not Kafka clients.
    proxy.allow("connection closed");
    let text = proxy.render(&text);
    let config = Volume::create(&made(&dir, "config"), "proxy.yaml", text.as_bytes());
    let watcher = Watcher::start(&config.path(), &proxy.admin, &NO_RESYNC);
    // Its first reconcile found the proxy in sync.
    let deadline = Instant::now() + Duration::from_secs(30);
    while watcher.metric("sluice_watcher_reloads_total{result=\"unchanged\"}") < 1.0 {
        assert!(Instant::now() < deadline, "the watcher never reconciled");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(served_serial(port, &ca), "1001");
    let client = Steady::start_tls(
        &format!("localhost:{port}"),
        "renewed",
        "renewed-group",
        &ca_file,
    );
    let generation = |p: &Proxy| p.clusters().clusters[0].generation;
    let (before, first_generation) = (proxy.status(), generation(&proxy));
    let drained = "sluice_drained_connections_total";

    secret.swap_files(&pair(&ca.server("two", 1002)));
    let swapped = Instant::now();
    let deadline = swapped + Duration::from_secs(30);
    while served_serial(port, &ca) != "1002" {
        assert!(
            Instant::now() < deadline,
            "the renewed certificate never served"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = swapped.elapsed();
    let after = proxy.status();
    assert_eq!(after.current_config_version, before.current_config_version);
    assert_eq!(after.current_config_version.as_str(), version(&text));
    assert_ne!(after.effective_version, before.effective_version);
    assert_eq!(generation(&proxy), first_generation, "no new generation");
    assert_eq!(proxy.metric(drained), 0.0, "nothing drained");
    let report = client.finish();
    assert_eq!(report["lost"], 0, "{report}");
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["disconnects"], 0, "{report}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    eprintln!("renewed certificate served {took:?} after the swap");
}

#[test]
fn a_mismatched_pair_in_the_secret_is_refused_and_the_old_pair_keeps_serving() {
    let port = ports(2);
    let dir = tempfile::tempdir().expect("dir");
    let ca = Ca::new("mismatch");
    let mut secret = Volume::create_files(&made(&dir, "secret"), &pair(&ca.server("good", 21)));
    let mut proxy = Proxy::start(&with_tls("{admin}", port, &secret));
    proxy.allow("does not match");
    proxy.allow("bootstrap server unreachable");
    let text = proxy.render(&with_tls("{admin}", port, &secret));
    let config = Volume::create(&made(&dir, "config"), "proxy.yaml", text.as_bytes());
    let mut watcher = Watcher::start(&config.path(), &proxy.admin, &NO_RESYNC);
    let deadline = Instant::now() + Duration::from_secs(30);
    while watcher.metric("sluice_watcher_reloads_total{result=\"unchanged\"}") < 1.0 {
        assert!(Instant::now() < deadline, "the watcher never reconciled");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = proxy.status();

    // A certificate with another pair's key.
    let (new, other) = (ca.server("new", 22), ca.server("other", 23));
    let mismatched = [
        ("tls.crt", new.cert.as_bytes()),
        ("tls.key", other.key.as_bytes()),
    ];
    secret.swap_files(&mismatched);
    watcher.wait_for_log("does not match", Duration::from_secs(30));
    assert!(watcher.metric("sluice_watcher_validation_rejections_total") >= 1.0);
    assert_eq!(served_serial(port, &ca), "21", "the old pair keeps serving");
    let after = proxy.status();
    assert_eq!(after.current_config_version, before.current_config_version);
    assert_eq!(after.effective_version, before.effective_version);
    let failed = after.last_failed_version.expect("the failure is in status");
    assert_ne!(
        failed.version, after.current_config_version,
        "never pinned on the version in force"
    );
    assert!(failed.reason.contains("invalid"), "{failed:?}");
}
