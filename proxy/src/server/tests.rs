//! `run` in-process: start, serve until the token, and the exit statuses of
//! the ways start fails.

use std::time::Duration;

use sluice_process::exit::{Exit, ExitStatus};
use sluice_testkit::ports::{port, ports};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

mod hold;

fn options(dir: &tempfile::TempDir, text: &str) -> RunOptions {
    let config = dir.path().join("proxy.yaml");
    std::fs::write(&config, text).expect("write");
    RunOptions {
        config,
        persist: false,
        admin_read_timeout: Duration::from_secs(5),
        instance: "test-proxy".to_owned(),
        file_roots: Vec::new(),
        hold: None,
    }
}

fn config(admin: u16, bootstrap: u16) -> String {
    let brokers = bootstrap + 1;
    let gateway = format!(
        "{{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {bootstrap}, brokerPorts: {{ start: {brokers}, count: 1 }} }}"
    );
    format!(
        "admin: {{ listen: \"127.0.0.1:{admin}\" }}\ndrainTimeout: 1s\nvirtualClusters:\n  - name: demo\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"] }}\n    gateway: {gateway}\n"
    )
}

async fn get(addr: SocketAddr, path: &str) -> String {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.expect("read");
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_then_serves_the_admin_api_until_the_token_is_cancelled() {
    let dir = tempfile::tempdir().expect("dir");
    let (admin, bootstrap) = (port(), ports(2));
    let proxy = Proxy::start(options(&dir, &config(admin, bootstrap)))
        .await
        .expect("starts");
    assert_eq!(proxy.admin_addr().port(), admin);
    let shutdown = CancellationToken::new();
    let serving = tokio::spawn(proxy.serve(shutdown.clone()));

    let answer = get(SocketAddr::from(([127, 0, 0, 1], admin)), "/admin/health").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    shutdown.cancel();
    let stopped = tokio::time::timeout(Duration::from_secs(10), serving).await;
    assert!(matches!(stopped, Ok(Ok(()))), "{stopped:?}");
}

#[tokio::test]
async fn an_unreadable_file_exits_2_and_an_invalid_one_exits_1() {
    let dir = tempfile::tempdir().expect("dir");
    let mut missing = options(&dir, "");
    missing.config = dir.path().join("missing.yaml");
    let e = Proxy::start(missing).await.expect_err("no file");
    assert!(matches!(e, RunError::Read { .. }), "{e}");
    assert_eq!(e.exit(), Exit::Usage);

    let e = Proxy::start(options(&dir, "virtualClusters: 3\n"))
        .await
        .expect_err("invalid");
    assert!(matches!(e, RunError::Invalid { .. }), "{e}");
    assert_eq!(e.exit(), Exit::Invalid);
}
