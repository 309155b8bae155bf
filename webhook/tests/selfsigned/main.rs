//! `--self-signed` against a recorded API-server interaction. No
//! kube-apiserver runs here: `apiserver` plays it for exactly the calls the
//! webhook makes (Secret GET/PUT/POST, ValidatingWebhookConfiguration
//! GET/merge PATCH), from bodies in the shape the real API server returns
//! (`tests/fixtures/apiserver/`), with its `resourceVersion` rules and a 409
//! on a stale write. The webhook runs in-process, its kube client pointed at
//! that server; reviews are real AdmissionReview JSON over TLS, each on a new
//! connection that trusts only the caBundle in the configuration, now or a
//! second ago, as an API server would (`binary` runs the real binary, which
//! finds the same server through a kubeconfig).

use std::collections::{BTreeSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sluice_webhook::run::{Certificate, FileCheck, Options, RunError, Webhook};
use sluice_webhook::selfsigned::{Lifetimes, Settings};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod apiserver;
mod binary;
mod recovery;
mod reviewer;

use apiserver::ApiServer;

/// A webhook serving in this process.
struct Running {
    addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<Result<(), RunError>>,
}

impl Running {
    /// Serves with these lifetimes (seconds), for 127.0.0.1, the Service's
    /// name and `more` hosts.
    async fn start(api: &ApiServer, more: &[&str], serving: u64, ca: u64) -> Running {
        let settings = Settings {
            namespace: "sluice-system".to_owned(),
            secret: "sluice-webhook-tls".to_owned(),
            configuration: "sluice-webhook".to_owned(),
            hosts: ["sluice-webhook.sluice-system.svc", "127.0.0.1"]
                .iter()
                .chain(more)
                .map(|h| (*h).to_owned())
                .collect(),
            lifetimes: Lifetimes::try_new(Duration::from_secs(serving), Duration::from_secs(ca))
                .expect("lifetimes"),
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], sluice_testkit::ports::port()));
        let options = Options {
            listen: addr,
            metrics_listen: None,
            certificate: Certificate::SelfSigned(settings),
            config_key: "proxy.yaml".to_owned(),
            files: FileCheck::PathsOnly,
            max_errors: 20,
            read_timeout: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(5),
            watch: Default::default(),
        };
        let webhook = Webhook::start_with(options, Some(api.client()))
            .await
            .expect("starts");
        let stop = CancellationToken::new();
        let task = tokio::spawn(webhook.serve(stop.clone()));
        Running { addr, stop, task }
    }

    async fn shut_down(self) {
        self.stop.cancel();
        let stopped = tokio::time::timeout(Duration::from_secs(10), self.task).await;
        assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
    }

    /// A metric's value, read over TLS trusting `bundle`.
    async fn metric(&self, bundle: &str, name: &str) -> Option<i64> {
        let (_, text) = reviewer::request(self.addr, bundle, "GET", "/metrics", b"")
            .await
            .ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    }
}

/// Polls `check` every 50 ms until it returns `Some`, at most `limit`.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The caBundle, once every webhook of the configuration has the same one.
fn published(api: &ApiServer) -> Option<String> {
    let bundles = api.ca_bundles();
    let first = bundles.first()?.clone()?;
    bundles
        .iter()
        .all(|b| b.as_ref() == Some(&first))
        .then_some(first)
}

/// Waits for the caBundle to be published.
async fn wait_for_bundle(api: &ApiServer) -> String {
    eventually("the caBundle", Duration::from_secs(20), || async {
        published(api)
    })
    .await
}

/// Waits until a new handshake trusting `bundle` succeeds; the serial and
/// notAfter of the certificate it got.
async fn served(addr: SocketAddr, bundle: &str) -> (Vec<u8>, i64) {
    eventually("a served certificate", Duration::from_secs(20), || {
        let bundle = bundle.to_owned();
        async move { reviewer::served(addr, &bundle).await.ok() }
    })
    .await
}

fn cas(bundle: &str) -> usize {
    bundle.matches("BEGIN CERTIFICATE").count()
}

/// How late an API server may see a change of the webhook configuration
/// (its informers lag).
const LAG: Duration = Duration::from_secs(1);

/// Reviews sent one after another until stopped, each on a new connection
/// trusting, in turn, the caBundle now in the configuration and the one of
/// a second ago; counts those allowed and keeps every failure.
struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicUsize>,
    task: JoinHandle<Vec<String>>,
}

impl Load {
    fn start(api: &Arc<ApiServer>, addr: SocketAddr) -> Load {
        let (stop, ok) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let (api, stop2, ok2) = (Arc::clone(api), Arc::clone(&stop), Arc::clone(&ok));
        let task = tokio::spawn(async move {
            let mut failures = Vec::new();
            let mut seen: VecDeque<(Instant, String)> = VecDeque::new();
            while !stop2.load(Ordering::Relaxed) {
                seen.push_back((Instant::now(), published(&api).expect("a caBundle")));
                while seen.len() > 1 && seen[1].0.elapsed() >= LAG {
                    seen.pop_front();
                }
                let bundle = match ok2.load(Ordering::Relaxed) % 2 {
                    0 => &seen[seen.len() - 1].1,
                    _ => &seen[0].1,
                };
                match reviewer::review(addr, bundle).await {
                    Ok(()) => ok2.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        failures.push(e);
                        0
                    }
                };
            }
            failures
        });
        Load { stop, ok, task }
    }

    async fn finish(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        let failures = self.task.await.expect("load task");
        let ok = self.ok.load(Ordering::Relaxed);
        assert!(
            failures.is_empty(),
            "{} of {} reviews failed: {failures:?}",
            failures.len(),
            ok + failures.len()
        );
        ok
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_second_certificate_renews_and_the_ca_rotates_under_continuous_reviews() {
    let api = Arc::new(ApiServer::start().await);
    let hook = Running::start(&api, &[], 10, 30).await;
    let first = wait_for_bundle(&api).await;
    assert_eq!(cas(&first), 1);
    let first_ca = api
        .secret_data("signing-ca.crt")
        .expect("the Secret holds the CA");
    assert_eq!(first.trim(), first_ca.trim());

    let load = Load::start(&api, hook.addr);
    // Polled, not awaited: each renewal shows as a new serial on a new
    // handshake, the rotation as a bundle of two CAs and then of one new CA.
    let (mut serials, mut overlap) = (BTreeSet::new(), false);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let bundle = published(&api).expect("a caBundle");
        if let Ok((serial, _)) = reviewer::served(hook.addr, &bundle).await {
            serials.insert(serial);
        }
        overlap |= cas(&bundle) == 2;
        if serials.len() >= 4 && overlap && cas(&bundle) == 1 && bundle != first {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} serials, overlap seen: {overlap}, bundle of {} CAs",
            serials.len(),
            cas(&bundle)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let reviews = load.finish().await;
    assert!(reviews >= 20, "only {reviews} reviews");

    // The expiry metric follows the certificate in use.
    let bundle = published(&api).expect("bundle");
    eventually(
        "the expiry metric of the served certificate",
        Duration::from_secs(10),
        || {
            let (hook, bundle) = (&hook, bundle.clone());
            async move {
                let (_, not_after) = reviewer::served(hook.addr, &bundle).await.ok()?;
                let metric = hook
                    .metric(
                        &bundle,
                        "sluice_webhook_certificate_expiry_timestamp_seconds",
                    )
                    .await?;
                (metric == not_after).then_some(())
            }
        },
    )
    .await;
    assert_eq!(api.conflicts(), (0, 0));
    hook.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_empty_secret_end_with_one_ca() {
    let api = Arc::new(ApiServer::start().await);
    // Both replicas read the empty Secret before either writes it.
    api.hold_secret_reads(2);
    let (a, b) = tokio::join!(
        Running::start(&api, &[], 3600, 36_000),
        Running::start(&api, &[], 3600, 36_000)
    );
    let bundle = wait_for_bundle(&api).await;
    let (from_a, from_b) = (served(a.addr, &bundle).await, served(b.addr, &bundle).await);
    assert_eq!(
        from_a, from_b,
        "both replicas serve the Secret's certificate"
    );
    assert_eq!(cas(&bundle), 1);
    assert_eq!(
        Some(bundle.trim()),
        api.secret_data("signing-ca.crt").as_deref().map(str::trim)
    );
    assert_eq!(api.conflicts().0, 1, "exactly one replica lost the race");
    for hook in [&a, &b] {
        reviewer::review(hook.addr, &bundle).await.expect("allowed");
    }
    // The patch set caBundle in every webhook and changed nothing else.
    let mut after = api.configuration();
    let recorded = apiserver::recorded("validatingwebhookconfiguration.json");
    for webhook in after["webhooks"].as_array_mut().expect("webhooks") {
        let client = webhook["clientConfig"]
            .as_object_mut()
            .expect("clientConfig");
        assert!(client.remove("caBundle").is_some());
    }
    after["metadata"]["resourceVersion"] = recorded["metadata"]["resourceVersion"].clone();
    assert_eq!(after, recorded);
    a.shut_down().await;
    b.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_outage_is_retried_while_the_webhook_keeps_serving() {
    let api = Arc::new(ApiServer::start().await);
    // No Secret at all: the webhook creates it (POST) before filling it.
    api.delete_secret();
    let hook = Running::start(&api, &[], 10, 30).await;
    let bundle = wait_for_bundle(&api).await;
    let (first, not_after) = served(hook.addr, &bundle).await;

    let load = Load::start(&api, hook.addr);
    api.stop();
    // The renewal (due at 2/3 of the 10 s) fails and is retried.
    let failures = "sluice_webhook_self_signed_failures_total";
    eventually("failed passes", Duration::from_secs(20), || {
        let (hook, bundle) = (&hook, bundle.clone());
        async move { hook.metric(&bundle, failures).await.filter(|n| *n >= 2) }
    })
    .await;
    api.restart().await;
    let (renewed, _) = eventually("the renewed certificate", Duration::from_secs(20), || {
        let (bundle, first) = (bundle.clone(), first.clone());
        async move {
            reviewer::served(hook.addr, &bundle)
                .await
                .ok()
                .filter(|(serial, _)| *serial != first)
        }
    })
    .await;
    assert_ne!(renewed, first);
    assert!(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs()
            <= u64::try_from(not_after).expect("positive"),
        "the old certificate expired before the renewal"
    );
    load.finish().await;
    hook.shut_down().await;
}
