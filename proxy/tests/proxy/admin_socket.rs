//! The admin server on a real socket (`127.0.0.1:0`): a caller without the
//! token is answered before it sends its body, a dribbled body is cut at its
//! total deadline, and connections beyond the cap are closed at once.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sluice_proxy::admin;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::admin_api::{Api, TOKEN};

/// The cap on open admin connections.
const CAP: usize = 64;

/// An admin server for `api` on a free port; stops when the token is dropped.
async fn serve(api: &Api, read_timeout: Duration) -> (SocketAddr, tokio_util::sync::DropGuard) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    tokio::spawn(admin::serve(
        listener,
        api.state.clone(),
        read_timeout,
        shutdown.clone(),
    ));
    (addr, shutdown.drop_guard())
}

/// The first bytes of the answer, or `None` if none came within `wait`.
async fn answer(tcp: &mut TcpStream, wait: Duration) -> Option<String> {
    let mut buf = [0u8; 2048];
    let n = tokio::time::timeout(wait, tcp.read(&mut buf))
        .await
        .ok()?
        .ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

#[tokio::test]
async fn a_missing_token_is_answered_before_the_body_is_sent() {
    let api = Api::start("{ listen: 127.0.0.1:1, tokenFile: token }", None);
    // The body's deadline would be 30 s.
    let (addr, _stop) = serve(&api, Duration::from_secs(10)).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(
        b"POST /admin/config/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n",
    )
    .await
    .unwrap();
    let got = answer(&mut tcp, Duration::from_secs(5)).await;
    let got = got.expect("no answer within 5 s: the body is read before the token is checked");
    assert!(got.starts_with("HTTP/1.1 401"), "{got}");
}

#[tokio::test]
async fn a_dribbled_body_is_cut_at_its_total_deadline() {
    let api = Api::start("{ listen: 127.0.0.1:1, tokenFile: token }", None);
    // Headers within 300 ms, the whole body within 900 ms.
    let (addr, _stop) = serve(&api, Duration::from_millis(300)).await;
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = tcp.into_split();
    let head = format!(
        "POST /admin/config/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 40\r\n\r\n"
    );
    write.write_all(head.as_bytes()).await.unwrap();
    let sent = Instant::now();
    // One byte every 100 ms: 4 s in all, never 300 ms of silence.
    let dribble = tokio::spawn(async move {
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if write.write_all(b"#").await.is_err() {
                return;
            }
        }
    });
    let mut buf = [0u8; 2048];
    let n = tokio::time::timeout(Duration::from_secs(8), read.read(&mut buf))
        .await
        .expect("an answer")
        .expect("read");
    let took = sent.elapsed();
    let got = String::from_utf8_lossy(&buf[..n]);
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(
        took < Duration::from_millis(2500),
        "answered after {took:?}"
    );
    dribble.abort();
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed_at_once_and_counted() {
    assert_eq!(admin::MAX_CONNECTIONS, CAP);
    let api = Api::start("{ listen: 127.0.0.1:1 }", None);
    let (addr, _stop) = serve(&api, Duration::from_secs(30)).await;
    let mut open = Vec::new();
    for _ in 0..CAP {
        open.push(TcpStream::connect(addr).await.unwrap());
    }
    // Accepted in order: the first CAP hold every slot.
    let mut extra = TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(5), extra.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "the connection past the cap stayed open: {closed:?}"
    );
    let metrics = api.state.engine.metrics().encode();
    assert!(
        metrics.contains("sluice_admin_connections_rejected_total 1"),
        "{metrics}"
    );
    // A slot freed is a slot usable again.
    drop(open.pop());
    let mut next = None;
    for _ in 0..50 {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET /admin/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        if let Some(got) = answer(&mut tcp, Duration::from_secs(2))
            .await
            .filter(|g| !g.is_empty())
        {
            next = Some(got);
            break;
        }
    }
    let got = next.expect("a connection after one closed");
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
}
