//! Hostile clients after the TLS handshake (the handshake itself is in
//! `admission`): headers that never end, a body that never arrives, and
//! megabytes of headers. Each costs only its own connection, in bounded time
//! and memory, while a well-behaved client is answered meanwhile.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::harness::{Pki, Webhook, fixture, tls_connect};

const READ_TIMEOUT: Duration = Duration::from_millis(500);

fn start(pki: &Pki) -> Webhook {
    Webhook::start(
        &pki.cert,
        &pki.key,
        &pki.ca.pem,
        &["--read-timeout", "500ms"],
    )
}

/// Reads until the server closes (or 10 s pass); returns what it sent and
/// how long that took.
async fn until_closed<S: AsyncReadExt + Unpin>(stream: &mut S) -> (String, Duration) {
    let started = Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the connection was still open after 10 s");
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

async fn a_good_review_is_answered(webhook: &Webhook) {
    let (status, answer) = webhook.review(fixture("valid-create.json")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
}

#[tokio::test]
async fn headers_that_never_end_are_cut_off_at_the_read_timeout() {
    let pki = Pki::new();
    let webhook = start(&pki);
    let mut slow = tls_connect(webhook.addr, &pki.ca.pem).await;
    slow.write_all(
        b"POST /validate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n",
    )
    .await
    .expect("write");
    a_good_review_is_answered(&webhook).await;
    let (_, took) = until_closed(&mut slow).await;
    assert!(took < Duration::from_secs(3), "closed after {took:?}");
    a_good_review_is_answered(&webhook).await;
}

#[tokio::test]
async fn a_body_that_never_arrives_gets_408() {
    let pki = Pki::new();
    let webhook = start(&pki);
    let mut slow = tls_connect(webhook.addr, &pki.ca.pem).await;
    slow.write_all(
        b"POST /validate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"kind\":",
    )
    .await
    .expect("write");
    a_good_review_is_answered(&webhook).await;
    let (answer, took) = until_closed(&mut slow).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        took >= READ_TIMEOUT - Duration::from_millis(100),
        "answered after {took:?}"
    );
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
}

#[tokio::test]
async fn megabytes_of_headers_cost_bounded_time_and_memory() {
    let pki = Pki::new();
    let webhook = start(&pki);
    a_good_review_is_answered(&webhook).await;
    let before = webhook.rss_kib();
    for _ in 0..5 {
        let mut flood = tls_connect(webhook.addr, &pki.ca.pem).await;
        flood
            .write_all(b"POST /validate HTTP/1.1\r\nHost: webhook\r\n")
            .await
            .expect("write");
        let line = format!("X-Filler: {}\r\n", "a".repeat(8 * 1024));
        // 2 MiB of headers; the server may close before all of it is sent.
        for _ in 0..256 {
            if flood.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
        let (answer, took) = until_closed(&mut flood).await;
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
            "{answer}"
        );
        assert!(took < Duration::from_secs(3), "closed after {took:?}");
    }
    a_good_review_is_answered(&webhook).await;
    let after = webhook.rss_kib();
    assert!(
        after < before + 16 * 1024,
        "RSS grew from {before} KiB to {after} KiB"
    );
}
