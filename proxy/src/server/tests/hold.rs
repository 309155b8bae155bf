//! `run --hold` with real listeners on 127.0.0.1: while held, a client's
//! connection to a data port is closed unserved and the proxy is not ready;
//! `POST /admin/config/release` (guarded like reload), a reload that
//! applies, or the timeout makes it serve, each the version it says. A
//! served connection is seen where it leads: the fake upstream (a bare
//! listener) accepts it.

use std::time::Duration;

use clap::Parser;
use sluice_admin_api::{ConfigStatus, Released, ReloadAnswer, endpoints};
use sluice_testkit::http::Response;
use sluice_testkit::logs::Logs;
use sluice_testkit::ports::{port, ports};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

use super::*;
use crate::cli::{Cli, Command};

/// How long a test waits for anything that should happen.
const PATIENCE: Duration = Duration::from_secs(10);

/// A token the proxy accepts (32 characters at least).
const TOKEN: &str = "hold-test-token-0123456789abcdef0123";

/// One cluster on `bootstrap` (and the next port) in front of `upstream`;
/// `admin` more keys of `admin:` (the token file).
fn config(admin: u16, bootstrap: u16, upstream: SocketAddr, more: &str) -> String {
    format!(
        "admin: {{ listen: \"127.0.0.1:{admin}\"{more} }}\ndrainTimeout: 1s\nvirtualClusters:\n  - name: demo\n    upstream: {{ bootstrapServers: [\"{upstream}\"], checkOnReload: false }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {bootstrap}, brokerPorts: {{ start: {}, count: 1 }} }}\n",
        bootstrap + 1
    )
}

/// A fake upstream: a bare listener whose accepts show a served connection.
async fn upstream() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    (listener, addr)
}

/// A held proxy on `text`, serving its admin API in the background.
async fn held(
    dir: &tempfile::TempDir,
    text: &str,
    timeout: Duration,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let mut options = options(dir, text);
    options.hold = Some(timeout);
    let proxy = Proxy::start(options).await.expect("starts");
    assert!(proxy.engine.is_held(), "held from the start");
    let shutdown = CancellationToken::new();
    let serving = tokio::spawn(proxy.serve(shutdown.clone()));
    (shutdown, serving)
}

/// One admin call from loopback (the test kit's client, off the runtime).
async fn call(
    admin: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let (method, path, body) = (method.to_owned(), path.to_owned(), body.to_vec());
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        sluice_testkit::http::request(
            &format!("127.0.0.1:{admin}"),
            &method,
            &path,
            &headers,
            &body,
        )
    })
    .await
    .expect("task")
    .expect("admin call")
}

async fn status(admin: u16) -> ConfigStatus {
    call(admin, "GET", endpoints::STATUS, &[], b"")
        .await
        .parse()
}

/// Waits until status says the data plane is no longer held.
async fn until_released(admin: u16) -> ConfigStatus {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let s = status(admin).await;
        if !s.held {
            return s;
        }
        assert!(tokio::time::Instant::now() < deadline, "still held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A client's connection to `port` is closed without being served.
async fn closed_unserved(port: u16) {
    let mut tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("the port is bound");
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(PATIENCE, tcp.read(&mut buf))
        .await
        .expect("closed at once, not left waiting");
    assert!(matches!(read, Ok(0) | Err(_)), "closed: {read:?}");
}

/// A client's connection to `port` is served: the proxy connects it to
/// `upstream`, which accepts it.
async fn served_by(port: u16, upstream: &TcpListener) -> TcpStream {
    let client = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let accepted = tokio::time::timeout(PATIENCE, upstream.accept()).await;
    assert!(
        matches!(accepted, Ok(Ok(_))),
        "served through: {accepted:?}"
    );
    client
}

#[tokio::test]
async fn a_held_proxy_serves_no_client_until_released_and_release_is_guarded_like_reload() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("token"), TOKEN).expect("token");
    let (admin, bootstrap) = (port(), ports(2));
    let (up, up_addr) = upstream().await;
    let text = config(admin, bootstrap, up_addr, ", tokenFile: token");
    let (shutdown, serving) = held(&dir, &text, Duration::from_secs(600)).await;

    let s = status(admin).await;
    assert!(s.held && s.ready, "held, started: {s:?}");
    assert_eq!(
        call(admin, "GET", endpoints::READY, &[], b"").await.status,
        503
    );
    closed_unserved(bootstrap).await;
    closed_unserved(bootstrap + 1).await;

    // Without the token: refused, still held (the guard of reload).
    let refused = call(admin, "POST", endpoints::RELEASE, &[], b"").await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(status(admin).await.held);

    let bearer = format!("Bearer {TOKEN}");
    let auth = [("Authorization", bearer.as_str())];
    let answer = call(admin, "POST", endpoints::RELEASE, &auth, b"").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let released: Released = answer.parse();
    assert!(released.released);
    assert_eq!(released.current_config_version, s.current_config_version);
    assert!(!status(admin).await.held);
    assert_eq!(
        call(admin, "GET", endpoints::READY, &[], b"").await.status,
        200
    );
    let _client = served_by(bootstrap, &up).await;
    // Once more: nothing to release.
    let again: Released = call(admin, "POST", endpoints::RELEASE, &auth, b"")
        .await
        .parse();
    assert!(!again.released);

    shutdown.cancel();
    serving.await.expect("stopped");
}

#[tokio::test]
async fn a_reload_while_held_applies_and_serves_the_reloaded_version() {
    let dir = tempfile::tempdir().expect("dir");
    let (admin, bootstrap) = (port(), ports(2));
    let (_file_up, file_addr) = upstream().await;
    let (new_up, new_addr) = upstream().await;
    let (shutdown, serving) = held(
        &dir,
        &config(admin, bootstrap, file_addr, ""),
        Duration::from_secs(600),
    )
    .await;
    let held_version = status(admin).await.current_config_version;
    closed_unserved(bootstrap).await;

    let next = config(admin, bootstrap, new_addr, "");
    let if_match = [(endpoints::IF_MATCH, held_version.as_str())];
    let answer = call(admin, "POST", endpoints::RELOAD, &if_match, next.as_bytes()).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let applied = ReloadAnswer::from_http(answer.status, answer.body.as_bytes());
    assert!(
        matches!(applied, Ok(ReloadAnswer::Applied(_))),
        "{applied:?}"
    );

    let s = status(admin).await;
    assert!(!s.held, "the reload released it");
    assert_eq!(
        s.current_config_version.as_str(),
        sluice_testkit::config::version(&next)
    );
    assert_eq!(
        call(admin, "GET", endpoints::READY, &[], b"").await.status,
        200
    );
    let _client = served_by(bootstrap, &new_up).await;

    shutdown.cancel();
    serving.await.expect("stopped");
}

#[tokio::test]
async fn at_the_timeout_the_files_version_serves_with_a_warning() {
    let (logs, _guard) = Logs::capture();
    let dir = tempfile::tempdir().expect("dir");
    let (admin, bootstrap) = (port(), ports(2));
    let (up, up_addr) = upstream().await;
    let text = config(admin, bootstrap, up_addr, "");
    let (shutdown, serving) = held(&dir, &text, Duration::from_millis(300)).await;

    let s = until_released(admin).await;
    assert_eq!(
        s.current_config_version.as_str(),
        sluice_testkit::config::version(&text)
    );
    let _client = served_by(bootstrap, &up).await;
    let text = logs.text();
    assert!(
        text.contains("WARN")
            && text.contains("within the --hold timeout: serving the configuration file's version"),
        "{text}"
    );

    shutdown.cancel();
    serving.await.expect("stopped");
}

#[test]
fn hold_alone_waits_60s_and_takes_a_timeout_after_an_equals_sign() {
    let hold = |args: &[&str]| {
        let mut argv = vec!["sluice-proxy", "run", "--config", "proxy.yaml"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Command::Run(run)) => Ok(run.hold),
            Ok(other) => panic!("not run: {other:?}"),
            Err(e) => Err(e.kind()),
        }
    };
    assert_eq!(hold(&[]), Ok(None));
    assert_eq!(hold(&["--hold"]), Ok(Some(Duration::from_secs(60))));
    assert_eq!(hold(&["--hold=2m"]), Ok(Some(Duration::from_secs(120))));
    assert!(hold(&["--hold=0s"]).is_err(), "a timeout is more than 0s");
}
