//! The webhook in-process: start on `127.0.0.1:0`, serve until the token.

use std::time::Duration;

use sluice_testkit::certs::self_signed;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

fn options(dir: &tempfile::TempDir) -> Options {
    let (tls_cert, tls_key) =
        self_signed(&["localhost"], None).write(dir.path(), "tls.crt", "tls.key");
    Options {
        listen: "127.0.0.1:0".parse().expect("addr"),
        metrics_listen: Some("127.0.0.1:0".parse().expect("addr")),
        tls_cert,
        tls_key,
        config_key: "proxy.yaml".to_owned(),
        files: FileCheck::PathsOnly,
        max_errors: 20,
        read_timeout: Duration::from_secs(5),
        shutdown_grace: Duration::from_secs(5),
        watch: WatchOptions::default(),
    }
}

async fn get(addr: SocketAddr, path: &str) -> String {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.expect("read");
    answer
}

#[tokio::test]
async fn starts_then_serves_until_the_token_is_cancelled() {
    let dir = tempfile::tempdir().expect("dir");
    let webhook = Webhook::start(options(&dir)).await.expect("starts");
    assert_ne!(webhook.local_addr().port(), 0);
    let plain = webhook.metrics_addr().expect("a metrics port");
    let shutdown = CancellationToken::new();
    let serving = tokio::spawn(webhook.serve(shutdown.clone()));

    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let answer = get(plain, "/readyz").await;
        if answer.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never ready: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    shutdown.cancel();
    let stopped = tokio::time::timeout(Duration::from_secs(5), serving).await;
    assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
}

#[tokio::test]
async fn a_taken_port_is_a_start_error_with_status_2() {
    let dir = tempfile::tempdir().expect("dir");
    let taken = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let mut o = options(&dir);
    o.listen = taken.local_addr().expect("addr");
    let e = Webhook::start(o).await.expect_err("the port is taken");
    assert!(matches!(e, RunError::Bind { .. }), "{e}");
    assert_eq!(e.exit(), Exit::Usage);
}
