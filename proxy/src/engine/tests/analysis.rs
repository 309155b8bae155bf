//! The client-side analysis, in-process on ports of 127.0.0.1 with a fake
//! [`Observe`](crate::engine::Observe): a finding returns to the last good
//! version's bytes and files as they were read, no finding keeps the
//! version, the version before decides whether a change is judged, a newer
//! reload cancels a running analysis, and a return and a reload never
//! interleave.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use sluice_admin_api::{Analysis, FailureStage, Verdict};
use sluice_testkit::certs::Ca;
use sluice_testkit::config::version;
use sluice_testkit::ports::ports;

use crate::config::{LocalFiles, validate};
use crate::engine::{Engine, ReloadOutcome};
use crate::metrics::Metrics;

mod fake;
mod race;

use fake::{Fake, cluster, config};

/// An engine started on `text`, files read beneath `dir`, observed by `fake`.
fn start(dir: &std::path::Path, text: &str, fake: &Arc<Fake>) -> Arc<Engine> {
    let files = LocalFiles::relative_to(dir);
    let valid = validate(text.as_bytes(), &files).unwrap();
    let observe: Arc<dyn crate::engine::Observe> = fake.clone();
    Engine::start_with(valid, Arc::new(Metrics::new()), Arc::new(files), observe).unwrap()
}

/// Waits until the analysis of the version of `text` has `verdict`.
async fn verdict(engine: &Engine, text: &str, verdict: Verdict) -> Analysis {
    let want = version(text);
    let mut shown = engine.analyses.subscribe();
    let found = tokio::time::timeout(
        Duration::from_secs(20),
        shown.wait_for(|(_, a)| {
            a.as_ref()
                .is_some_and(|a| a.version.as_str() == want && a.verdict == verdict)
        }),
    )
    .await
    .unwrap_or_else(|_| {
        panic!(
            "no {verdict:?} verdict; shown: {:?}",
            engine.status().analysis
        )
    })
    .unwrap();
    found.1.clone().unwrap()
}

/// `f`'s output, or a panic after 20 seconds (what a test awaits must
/// come).
async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within 20s"))
}

fn applied(outcome: ReloadOutcome) {
    assert!(
        matches!(outcome, ReloadOutcome::Applied { .. }),
        "{outcome:?}"
    );
}

/// The value of a metric series, if exposed.
fn metric(engine: &Engine, series: &str) -> Option<f64> {
    engine.metrics().encode().lines().find_map(|l| {
        let (name, value) = l.rsplit_once(' ')?;
        (name == series).then(|| value.parse().ok())?
    })
}

/// The serial number of the certificate presented on `port`, verified
/// against `ca` for `localhost`, as decimal text.
fn served_serial(port: u16, ca_pem: &str) -> String {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    let ca = rustls_pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap();
    roots.add(ca).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    while tls.is_handshaking() {
        tls.complete_io(&mut tcp).unwrap();
    }
    let der = tls.peer_certificates().unwrap()[0].clone();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    let _ = tcp.flush();
    let _ = tcp.read(&mut [0; 1]);
    cert.serial.to_string()
}

const TLS: &str = "      tls: { certFile: tls.crt, keyFile: tls.key }\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finding_returns_to_the_last_good_bytes_and_the_files_as_they_were_read() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("analysis");
    ca.server("old", 1).write(dir.path(), "tls.crt", "tls.key");
    let port = ports(2);
    let (fake, _heard) = Fake::new();
    let good = config(&[cluster("a", port, 100, TLS)]);
    let engine = start(dir.path(), &good, &fake);
    let good_effective = engine.status().effective_version;

    // The certificate is renewed on disk, and a change that breaks the
    // front door goes with it.
    ca.server("new", 2).write(dir.path(), "tls.crt", "tls.key");
    let bad = config(&[cluster("a", port, 13, TLS)]);
    applied(engine.reload(bad.as_bytes(), None));
    let analysis = verdict(&engine, &bad, Verdict::Regressed).await;
    assert!(analysis.reverted, "{analysis:?}");
    assert_eq!(analysis.previous.as_str(), version(&good));
    assert_eq!(analysis.clusters[0].verdict, Verdict::Regressed);
    assert_eq!(
        analysis.clusters[0]
            .front_door_before
            .as_ref()
            .unwrap()
            .steps[0]
            .address,
        "a@100"
    );

    let status = engine.status();
    assert_eq!(status.current_config_version.as_str(), version(&good));
    assert_eq!(
        status.effective_version, good_effective,
        "the files as read"
    );
    let failed = status.last_failed_version.unwrap();
    assert_eq!(failed.version.as_str(), version(&bad));
    assert_eq!(failed.stage, FailureStage::ClientCheck);
    assert_eq!(
        failed.reason,
        "virtual cluster a: bootstrap: before: a@100 worked; after: a@13: connection refused"
    );
    // The proxy holds the old certificate again, though the disk has the new.
    let pem = ca.pem.clone();
    let serial = tokio::task::spawn_blocking(move || served_serial(port, &pem))
        .await
        .unwrap();
    assert_eq!(serial, "1");
    assert_eq!(*fake.calls.lock().unwrap(), ["a@100", "a@13"]);
    assert_eq!(metric(&engine, "sluice_analysis_reverts_total"), Some(1.0));
    assert_eq!(metric(&engine, "sluice_analysis_running"), Some(0.0));
    assert_eq!(
        metric(
            &engine,
            "sluice_analysis_verdicts_total{cluster=\"a\",verdict=\"regressed\"}"
        ),
        Some(1.0)
    );
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_finding_passes_and_the_version_passed_is_the_next_return() {
    let dir = tempfile::tempdir().unwrap();
    let port = ports(2);
    let (fake, _heard) = Fake::new();
    let short = "    analysis: { window: 200ms }\n";
    let first = config(&[cluster("a", port, 100, short)]);
    let engine = start(dir.path(), &first, &fake);
    let benign = config(&[cluster("a", port, 50, short)]);
    applied(engine.reload(benign.as_bytes(), None));
    assert_eq!(
        engine.status().analysis.unwrap().verdict,
        Verdict::Running,
        "the answer does not wait for the window"
    );
    let analysis = verdict(&engine, &benign, Verdict::Passed).await;
    assert!(!analysis.reverted);
    assert_eq!(analysis.window_ms, 200);
    assert_eq!(analysis.clusters[0].verdict, Verdict::Passed);
    assert_eq!(
        engine.status().current_config_version.as_str(),
        version(&benign)
    );
    assert!(engine.status().last_failed_version.is_none());

    let bad = config(&[cluster("a", port, 13, short)]);
    applied(engine.reload(bad.as_bytes(), None));
    let analysis = verdict(&engine, &bad, Verdict::Regressed).await;
    assert_eq!(analysis.previous.as_str(), version(&benign));
    assert_eq!(
        engine.status().current_config_version.as_str(),
        version(&benign)
    );
    assert_eq!(
        metric(
            &engine,
            "sluice_analysis_verdicts_total{cluster=\"a\",verdict=\"passed\"}"
        ),
        Some(1.0)
    );
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_version_before_switches_the_analysis_off_for_the_next_change_only() {
    let dir = tempfile::tempdir().unwrap();
    let port = ports(2);
    let (fake, _heard) = Fake::new();
    let off = config(&[cluster(
        "a",
        port,
        100,
        "    analysis: { enabled: false }\n",
    )]);
    let engine = start(dir.path(), &off, &fake);
    // Broken, and judged by the version before: not at all.
    let on = "    analysis: { window: 5s }\n";
    let broken = config(&[cluster("a", port, 13, on)]);
    applied(engine.reload(broken.as_bytes(), None));
    let analysis = engine.status().analysis.unwrap();
    assert_eq!(analysis.verdict, Verdict::Off);
    assert_eq!(analysis.clusters[0].verdict, Verdict::Off);
    assert_eq!(
        analysis.clusters[0].notes,
        ["switched off by the version before (analysis.enabled: false)"]
    );
    assert!(fake.calls.lock().unwrap().is_empty());

    // The next change is judged (by the version now in force): its
    // signals regress, and the proxy returns to the version switched on.
    let next = config(&[cluster("a", port, 100, on)]);
    applied(engine.reload(next.as_bytes(), None));
    fake.fail_signals("a");
    let analysis = verdict(&engine, &next, Verdict::Regressed).await;
    assert!(analysis.reverted);
    let c = &analysis.clusters[0];
    assert_eq!(c.findings[0].step, "upstream_connect_failures");
    let before = &c.front_door_before.as_ref().unwrap().steps[0];
    assert!(
        !before.ok,
        "the baseline ran on the version in force: {before:?}"
    );
    assert_eq!(
        engine.status().current_config_version.as_str(),
        version(&broken)
    );
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_reload_cancels_the_analysis_and_the_last_good_version_stays_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let port = ports(2);
    let (fake, _heard) = Fake::new();
    let long = "    analysis: { window: 1h }\n";
    let good = config(&[cluster("a", port, 100, long)]);
    let engine = start(dir.path(), &good, &fake);
    let unjudged = config(&[cluster("a", port, 50, long)]);
    applied(engine.reload(unjudged.as_bytes(), None));
    assert_eq!(metric(&engine, "sluice_analysis_running"), Some(1.0));

    let bad = config(&[cluster("a", port, 13, long)]);
    applied(engine.reload(bad.as_bytes(), None));
    let analysis = verdict(&engine, &bad, Verdict::Regressed).await;
    // Judged against, and returned to, the last good version: never the
    // one whose analysis was cancelled.
    assert_eq!(analysis.previous.as_str(), version(&good));
    assert_eq!(
        analysis.clusters[0]
            .front_door_before
            .as_ref()
            .unwrap()
            .steps[0]
            .address,
        "a@100",
        "the baseline measured on the last good version"
    );
    assert_eq!(
        engine.status().current_config_version.as_str(),
        version(&good)
    );
    let calls = fake.calls.lock().unwrap().clone();
    assert_eq!(
        calls.iter().filter(|c| *c == "a@100").count(),
        1,
        "{calls:?}"
    );
    assert!(
        calls.iter().filter(|c| *c == "a@50").count() <= 1,
        "{calls:?}"
    );
    assert_eq!(metric(&engine, "sluice_analysis_running"), Some(0.0));
    assert_eq!(
        metric(
            &engine,
            "sluice_analysis_verdicts_total{cluster=\"a\",verdict=\"passed\"}"
        ),
        None,
        "the cancelled analysis has no verdict"
    );
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_observer_every_analysis_is_off_and_the_version_good_at_once() {
    let port = ports(2);
    let first = config(&[cluster("a", port, 100, "")]);
    let valid = validate(first.as_bytes(), &crate::config::MemoryFiles::default()).unwrap();
    let engine = Engine::start(
        valid,
        Arc::new(Metrics::new()),
        Arc::new(crate::config::MemoryFiles::default()),
    )
    .unwrap();
    assert!(engine.status().analysis.is_none(), "startup is not judged");
    let next = config(&[cluster("a", port, 13, "")]);
    applied(engine.reload(next.as_bytes(), None));
    let analysis = engine.status().analysis.unwrap();
    assert_eq!(analysis.verdict, Verdict::Off);
    assert_eq!(
        analysis.clusters[0].notes,
        ["nothing observes this proxy's clients (no front door or signals wired in)"]
    );
    assert_eq!(metric(&engine, "sluice_analysis_running"), Some(0.0));
    engine.shutdown().await;
}
