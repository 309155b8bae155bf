//! Finding 6 of issue 30, with the real binary: forty clients each sending
//! most of a 3 MiB review and then stalling do not take the webhook's
//! resident memory past a bound (before the cap, each buffered its 3 MiB:
//! forty took it past the manifests' 128 Mi), and a review arriving while
//! the slots are held is refused at once with 429 rather than queued.

use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use super::harness::{Pki, Webhook, fixture, tls_connect};

const CLIENTS: usize = 40;
const BODY: usize = 3 * 1024 * 1024 - 1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_slow_reviews_stay_within_a_memory_bound_and_the_excess_gets_429() {
    let pki = Pki::new();
    let webhook = Webhook::start(&pki.cert, &pki.key, &pki.ca.pem, &["--read-timeout", "60s"]);
    let (status, _) = webhook.review(fixture("valid-create.json")).await;
    assert_eq!(status, 200);
    let before = webhook.rss_kib();

    let (held_tx, mut held) = tokio::sync::mpsc::channel(CLIENTS);
    for _ in 0..CLIENTS {
        let mut slow = tls_connect(webhook.addr, &pki.ca.pem).await;
        let held_tx = held_tx.clone();
        tokio::spawn(async move {
            let head = format!(
                "POST /validate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: {BODY}\r\n\r\n["
            );
            let _ = slow.write_all(head.as_bytes()).await;
            let chunk = vec![b' '; 64 * 1024];
            // All but the last 64 KiB; the server may refuse before.
            for _ in 0..(BODY / chunk.len()) - 1 {
                if slow.write_all(&chunk).await.is_err() {
                    break;
                }
            }
            let _ = slow.flush().await;
            let _ = held_tx.send(slow).await;
        });
    }
    drop(held_tx);
    // Every client has written what it could (or was refused).
    let mut connections = Vec::new();
    let gathered = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(c) = held.recv().await {
            connections.push(c);
        }
    })
    .await;
    assert!(gathered.is_ok(), "the clients did not finish writing");
    let during = webhook.rss_kib();
    assert!(
        during < before + 48 * 1024,
        "RSS grew from {before} KiB to {during} KiB with {CLIENTS} slow reviews"
    );

    let started = Instant::now();
    let (status, answer) = webhook.review(fixture("valid-create.json")).await;
    let took = started.elapsed();
    assert_eq!(status, 429, "{answer}");
    assert!(took < Duration::from_secs(3), "refused after {took:?}");

    drop(connections);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _) = webhook.review(fixture("valid-create.json")).await;
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the slots were never freed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
