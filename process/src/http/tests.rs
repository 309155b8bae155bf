//! In-process, on `127.0.0.1:0`: real sockets, short real timeouts.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::ConnectInfo;
use axum::routing::{get, post};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Timeouts, serve};

const HEADERS: Duration = Duration::from_millis(300);

fn app() -> Router {
    Router::new()
        .route(
            "/peer",
            get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.to_string() }),
        )
        .route("/echo", post(|body: Bytes| async move { body }))
}

async fn start(timeouts: Timeouts) -> (SocketAddr, CancellationToken, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve(listener, app(), timeouts, shutdown.clone()));
    (addr, shutdown, server)
}

/// Reads until the server closes the connection; what it sent, and when.
async fn read_to_close(tcp: &mut TcpStream) -> (String, Instant) {
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut got)).await;
    assert!(read.is_ok(), "the server never closed the connection");
    (String::from_utf8_lossy(&got).into_owned(), Instant::now())
}

#[tokio::test]
async fn a_request_whose_headers_never_finish_is_disconnected() {
    let (addr, _shutdown, _server) = start(Timeouts::reading(HEADERS)).await;
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let sent = Instant::now();
    tcp.write_all(b"GET /peer HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    let (answer, closed) = read_to_close(&mut tcp).await;
    assert!(!answer.contains("200 OK"), "{answer}");
    let took = closed - sent;
    assert!(took >= HEADERS - Duration::from_millis(50), "{took:?}");
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_disconnected() {
    let (addr, _shutdown, _server) = start(Timeouts::reading(HEADERS)).await;
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let opened = Instant::now();
    let (answer, closed) = read_to_close(&mut tcp).await;
    assert!(answer.is_empty(), "{answer}");
    assert!(closed - opened >= HEADERS - Duration::from_millis(50));
}

#[tokio::test]
async fn a_body_that_stalls_is_cut_off() {
    let timeouts = Timeouts {
        headers: Duration::from_secs(5),
        body: HEADERS,
    };
    let (addr, _shutdown, _server) = start(timeouts).await;
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let sent = Instant::now();
    tcp.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
        .await
        .expect("write");
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(4), tcp.read(&mut buf))
        .await
        .expect("an answer before the header timeout")
        .expect("read");
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(!answer.contains("200 OK"), "{answer}");
    assert!(sent.elapsed() >= HEADERS - Duration::from_millis(50));
}

#[tokio::test]
async fn a_body_dribbled_byte_by_byte_is_cut_at_its_total_deadline() {
    let timeouts = Timeouts {
        headers: Duration::from_secs(5),
        body: HEADERS,
    };
    let (addr, _shutdown, _server) = start(timeouts).await;
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let sent = Instant::now();
    tcp.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n")
        .await
        .expect("write");
    let (mut read, mut write) = tcp.into_split();
    // One byte every 100 ms: each well within the deadline, the whole
    // (2 s) far beyond it.
    let dribble = tokio::spawn(async move {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if write.write_all(b"x").await.is_err() {
                return;
            }
        }
    });
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), read.read(&mut buf))
        .await
        .expect("an answer")
        .expect("read");
    let took = sent.elapsed();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(!answer.contains("200 OK"), "{answer}");
    assert!(
        took < HEADERS * 3,
        "cut at the deadline ({HEADERS:?}), not after the whole body: {took:?}"
    );
    dribble.abort();
}

#[tokio::test]
async fn handlers_see_the_peer_and_shutdown_waits_for_the_request_in_flight() {
    let (addr, shutdown, server) = start(Timeouts::reading(Duration::from_secs(5))).await;
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let local = tcp.local_addr().expect("local");
    tcp.write_all(b"GET /peer HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let mut buf = [0u8; 1024];
    let n = tcp.read(&mut buf).await.expect("read");
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with(&local.to_string()), "{answer}");

    // A request half sent when shutdown comes is still answered.
    tcp.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab")
        .await
        .expect("write");
    tokio::time::sleep(Duration::from_millis(50)).await;
    shutdown.cancel();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !server.is_finished(),
        "serve waits for the request in flight"
    );
    tcp.write_all(b"cd").await.expect("write");
    let (answer, _) = read_to_close(&mut tcp).await;
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with("abcd"), "{answer}");
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returns after the last connection")
        .expect("no panic");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
}

#[test]
fn body_timeout_is_three_times_the_read_timeout() {
    let t = Timeouts::reading(Duration::from_secs(10));
    assert_eq!(t.headers, Duration::from_secs(10));
    assert_eq!(t.body, Duration::from_secs(30));
    assert_eq!(Timeouts::reading(Duration::MAX).body, Duration::MAX);
}
