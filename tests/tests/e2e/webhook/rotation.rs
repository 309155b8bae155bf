//! Certificate rotation the way kubelet updates a Secret volume: the files
//! are symlinks through `..data` to a timestamped directory, and an update
//! writes a new directory and renames a new `..data` link over the old one
//! (one atomic step), then removes the old directory. New handshakes must
//! see the new certificate, with no request failing meanwhile; a broken new
//! pair must leave the old one in use.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sluice_testkit::certs::Leaf;
use sluice_testkit::volume::Volume;

use super::harness::{Webhook, client, fixture, leaf, new_ca, tls_connect};

/// Publishes a pair as a new version of the Secret volume.
fn publish(volume: &mut Volume, pair: &Leaf) {
    volume.swap_files(&[
        ("tls.crt", pair.cert.as_bytes()),
        ("tls.key", pair.key.as_bytes()),
    ]);
}

/// The serial number of the certificate a fresh handshake presents.
async fn served_serial(addr: std::net::SocketAddr, ca_pem: &str) -> Vec<u8> {
    let tls = tls_connect(addr, ca_pem).await;
    let leaf = tls.get_ref().1.peer_certificates().expect("a certificate")[0].clone();
    let (_, cert) = x509_parser::parse_x509_certificate(&leaf).expect("x509");
    cert.raw_serial().to_vec()
}

/// Waits, at most 10 s, until a fresh handshake presents `serial`.
async fn wait_for_serial(addr: std::net::SocketAddr, ca_pem: &str, serial: u8) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = served_serial(addr, ca_pem).await;
        if got == [serial] {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still serving serial {got:?}, want {serial}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Waits, at most 10 s, until `more` further requests went through,
/// so every step of the test happens with requests in flight.
async fn wait_for_requests(ok: &AtomicUsize, more: usize) {
    let target = ok.load(Ordering::Relaxed) + more;
    let deadline = Instant::now() + Duration::from_secs(10);
    while ok.load(Ordering::Relaxed) < target {
        assert!(Instant::now() < deadline, "requests stalled");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubelet_swap_rotates_the_certificate_without_failing_a_request() {
    let ca = new_ca();
    let (one, two, three) = (leaf(&ca, 1), leaf(&ca, 2), leaf(&ca, 3));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut volume = Volume::create_files(
        dir.path(),
        &[
            ("tls.crt", one.cert.as_bytes()),
            ("tls.key", one.key.as_bytes()),
        ],
    );
    let mut webhook = Webhook::start(
        &volume.file("tls.crt"),
        &volume.file("tls.key"),
        &ca.pem,
        &[],
    );
    let addr = webhook.addr;
    assert_eq!(served_serial(addr, &ca.pem).await, [1]);

    // Requests all along, each on a new connection (a new handshake).
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = {
        let (stop, ok, failed) = (Arc::clone(&stop), Arc::clone(&ok), Arc::clone(&failed));
        let url = webhook.url("/validate");
        let ca_pem = ca.pem.clone();
        tokio::spawn(async move {
            let body = fixture("valid-create.json");
            let deadline = Instant::now() + Duration::from_secs(60);
            for _ in 0..5_000 {
                if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
                    break;
                }
                let fresh = client(&ca_pem);
                let sent = fresh
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status() == 200 => ok.fetch_add(1, Ordering::Relaxed),
                    _ => failed.fetch_add(1, Ordering::Relaxed),
                };
            }
        })
    };

    wait_for_requests(&ok, 10).await;
    publish(&mut volume, &two);
    wait_for_serial(addr, &ca.pem, 2).await;

    wait_for_requests(&ok, 10).await;

    // A broken pair: serial 3's certificate with serial 2's key.
    let broken = Leaf {
        cert: three.cert.clone(),
        key: two.key.clone(),
    };
    publish(&mut volume, &broken);
    webhook.wait_for("new certificate files rejected", Duration::from_secs(10));
    assert_eq!(served_serial(addr, &ca.pem).await, [2]);

    wait_for_requests(&ok, 10).await;

    // And the right pair after it.
    publish(&mut volume, &three);
    wait_for_serial(addr, &ca.pem, 3).await;
    wait_for_requests(&ok, 10).await;

    stop.store(true, Ordering::Relaxed);
    load.await.expect("load task");
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    assert!(ok >= 40, "only {ok} requests went through");
    assert_eq!(failed, 0, "{failed} of {} requests failed", ok + failed);

    let (_, metrics) = webhook.get("/metrics").await;
    for line in [
        "sluice_webhook_certificate_reloads_total{result=\"applied\"} 2",
        "sluice_webhook_certificate_reloads_total{result=\"rejected\"} 1",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "{line} missing from\n{metrics}"
        );
    }
    webhook.assert_clean_logs(&["new certificate files rejected"]);
    let status = webhook.terminate(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
}
