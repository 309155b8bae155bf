//! The check against upstreams that fail in each way, in-process on
//! 127.0.0.1: nothing listening, a listener that never answers, a TLS
//! certificate for another name, and a broker that hangs up after
//! ApiVersions (what a SASL listener does).

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};
use sluice_config::model::VirtualCluster;
use sluice_config::{MemoryFiles, validate};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{Cause, Passed, check};

fn cluster(upstream: &str, files: &MemoryFiles) -> VirtualCluster {
    let yaml = format!(
        "virtualClusters:\n  - name: orders\n    upstream: {upstream}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: localhost\n      bootstrapPort: 19092\n      brokerPorts: {{ start: 19093, count: 1 }}\n"
    );
    let valid = validate(yaml.as_bytes(), files).unwrap_or_else(|e| panic!("{e:?}"));
    valid.config.virtual_clusters[0].clone()
}

async fn refused_port() -> u16 {
    // Reserved for this test process and never bound: nothing listens
    // there, and no other test (nor a client's source port) takes it.
    sluice_testkit::ports::port()
}

fn only_cause(e: &super::CheckFailed) -> &Cause {
    assert_eq!(e.servers.len(), 1, "{e}");
    &e.servers[0].1
}

#[tokio::test]
async fn nothing_listening_is_refused_and_named() {
    let port = refused_port().await;
    let c = cluster(
        &format!("{{ bootstrapServers: [\"127.0.0.1:{port}\"] }}"),
        &MemoryFiles::default(),
    );
    let e = check(&c).await.expect_err("refused");
    assert_eq!(only_cause(&e), &Cause::Refused);
    assert_eq!(
        e.to_string(),
        format!(
            "virtual cluster orders: upstream check failed: 127.0.0.1:{port}: connection refused"
        )
    );
}

#[tokio::test]
async fn a_listener_that_never_answers_times_out_within_check_timeout() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    // Accepts and holds every connection, answering nothing.
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            open.push(s);
        }
    });
    let c = cluster(
        &format!("{{ bootstrapServers: [\"127.0.0.1:{port}\"], checkTimeout: 300ms }}"),
        &MemoryFiles::default(),
    );
    let started = std::time::Instant::now();
    let e = check(&c).await.expect_err("timeout");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(only_cause(&e), &Cause::Timeout("300ms".to_owned()), "{e}");
    held.abort();
}

#[tokio::test]
async fn a_certificate_for_another_name_fails_with_the_certificate_problem() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let ca = sluice_testkit::certs::Ca::new("sluice test CA");
    let leaf = ca.sign(&["broker.other.example"], "broker", None);
    let server = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(leaf.cert.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(leaf.key.as_bytes()).unwrap(),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let serving = tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let _ = acceptor.accept(s).await;
        }
    });
    let files = MemoryFiles::default().with("ca.pem", ca.pem.clone());
    let c = cluster(
        &format!(
            "{{ bootstrapServers: [\"127.0.0.1:{port}\"], tls: {{ caFile: ca.pem, serverName: kafka.example }} }}"
        ),
        &files,
    );
    let e = check(&c).await.expect_err("name mismatch");
    let Cause::Tls(problem) = only_cause(&e) else {
        panic!("not a TLS failure: {e}");
    };
    assert!(
        problem.contains("certificate not valid for name"),
        "{problem}"
    );
    assert!(problem.contains("kafka.example"), "{problem}");
    serving.abort();
}

#[tokio::test]
async fn a_broker_that_hangs_up_after_api_versions_requires_sasl() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let broker = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        // ApiVersions v0: answer with Metadata 0-12, then hang up at the next request.
        let len = s.read_i32().await.unwrap();
        let mut request = vec![0; usize::try_from(len).unwrap()];
        s.read_exact(&mut request).await.unwrap();
        let correlation = i32::from_be_bytes(request[4..8].try_into().unwrap());
        let mut answer = ApiVersionsResponse::default();
        let mut metadata = ApiVersion::default();
        metadata.api_key = ApiKey::Metadata as i16;
        metadata.max_version = 12;
        answer.api_keys.push(metadata);
        let frame =
            sluice_kafka::encode::response(ApiKey::ApiVersions, 0, correlation, &answer).unwrap();
        s.write_all(&frame).await.unwrap();
        let _ = s.read_i32().await;
    });
    let c = cluster(
        &format!("{{ bootstrapServers: [\"127.0.0.1:{port}\"] }}"),
        &MemoryFiles::default(),
    );
    assert_eq!(
        check(&c).await,
        Ok(Passed::SaslRequired {
            server: format!("127.0.0.1:{port}")
        })
    );
    broker.await.unwrap();
}
