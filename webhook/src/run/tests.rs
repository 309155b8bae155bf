//! The webhook in-process: start on `127.0.0.1:0`, serve until the token.

use std::time::Duration;

use sluice_testkit::certs::self_signed;

use super::*;

fn options(dir: &tempfile::TempDir) -> Options {
    let (tls_cert, tls_key) =
        self_signed(&["localhost"], None).write(dir.path(), "tls.crt", "tls.key");
    Options {
        listen: "127.0.0.1:0".parse().expect("addr"),
        metrics_listen: Some("127.0.0.1:0".parse().expect("addr")),
        certificate: Certificate::Files {
            cert: tls_cert,
            key: tls_key,
        },
        config_key: "proxy.yaml".to_owned(),
        files: FileCheck::PathsOnly,
        max_errors: 20,
        read_timeout: Duration::from_secs(5),
        shutdown_grace: Duration::from_secs(5),
        watch: WatchOptions::default(),
    }
}

#[tokio::test]
async fn starts_then_serves_until_the_token_is_cancelled() {
    let dir = tempfile::tempdir().expect("dir");
    let webhook = Webhook::start(options(&dir)).await.expect("starts");
    assert_ne!(webhook.local_addr().port(), 0);
    let plain = webhook.metrics_addr().expect("a metrics port");
    let shutdown = CancellationToken::new();
    let serving = tokio::spawn(webhook.serve(shutdown.clone()));

    let at = plain.to_string();
    tokio::task::spawn_blocking(move || {
        sluice_testkit::http::wait_for_status(&at, "/readyz", 200, Duration::from_secs(5))
    })
    .await
    .expect("readyz");

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
