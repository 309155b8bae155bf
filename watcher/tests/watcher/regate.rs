//! The rollout gate opens for referenced files as they were when it
//! decided; files that change again before the watcher acts are not what the
//! peers ran. With a real proxy and a real Secret-style volume: `apply`
//! given the effective version the gate opened for sends nothing when the
//! files changed since (back to the gate), where without a gate the same call
//! validates them at once; and a reload names the files as validated, so a
//! change between the validate and the reload is refused. (Before, `apply` had no such check: a watcher
//! whose gate opened for the files in force validated a mismatched pair that
//! arrived meanwhile, ahead of the canary: the fleet renewal test failed so
//! in CI.)

use sluice_testkit::certs::{Ca, Leaf};
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_testkit::volume::Volume;
use sluice_watcher::client::{Answer, CallError, ProxyClient};
use sluice_watcher::metrics::Metrics;
use sluice_watcher::referenced::Referenced;
use sluice_watcher::run::{Effective, Outcome, apply};
use sluice_watcher::volume::{Content, WatchOptions};
use std::time::Duration;
use tokio::sync::watch;

fn pair<'a>(cert: &'a Leaf, key: &'a Leaf) -> [(&'static str, &'a [u8]); 2] {
    [
        ("tls.crt", cert.cert.as_bytes()),
        ("tls.key", key.key.as_bytes()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_changed_after_the_gate_opened_go_back_to_the_gate_unsent() {
    // As main does: one crypto provider, before any TLS-capable client.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = Ca::new("regate");
    let (first, second, third) = (
        ca.server("regate", 1),
        ca.server("regate", 2),
        ca.server("regate", 3),
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let secret_dir = dir.path().join("secret");
    std::fs::create_dir(&secret_dir).expect("secret dir");
    let mut secret = Volume::create_files(&secret_dir, &pair(&first, &first));
    let p = ports(2);
    let config = format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: a\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {p}, brokerPorts: {{ start: {}, count: 1 }}, tls: {{ certFile: secret/tls.crt, keyFile: secret/tls.key }} }}\n",
        p + 1
    );
    let proxy = Proxy::start_in(dir, &config);
    let client = ProxyClient::new(&format!("http://{}", proxy.admin), None).expect("client");
    let metrics = Metrics::new();
    let content = Content::read(&proxy.config);
    let (_tx, mut newer) = watch::channel(content.clone());
    let mut referenced = Referenced::new(&proxy.config, WatchOptions::default());
    let deadline = Duration::from_secs(10);
    // `apply` of the one content, with what the watcher knows of its
    // effective versions: the gate's, and none in sync.
    macro_rules! apply {
        ($gated:expr) => {
            apply(
                &client,
                &metrics,
                &content,
                deadline,
                &mut newer,
                &mut referenced,
                Effective {
                    in_sync: None,
                    gated: $gated,
                },
            )
            .await
        };
    }
    let config = content.digest.clone().expect("readable");
    let before = proxy.status();
    referenced.set(before.files.clone());
    let gated = referenced.effective(&config);
    assert_eq!(gated, before.effective_version, "watcher and proxy agree");

    // A mismatched pair arrives after the gate opened for the pair in force.
    secret.swap_files(&pair(&second, &third));
    let (outcome, _) = apply!(Some(&gated));
    assert_eq!(outcome, Outcome::Regate);
    let after = proxy.status();
    assert_eq!(after.last_validation_attempt, None, "nothing was sent");
    assert_eq!(after.last_reload_attempt, before.last_reload_attempt);

    // Without a gate (no peers), the same call validates them at once.
    let (outcome, about) = apply!(None);
    assert!(matches!(outcome, Outcome::Rejected(_)), "{outcome:?}");
    assert_eq!(about, Some(referenced.effective(&config)));
    assert!(proxy.status().last_validation_attempt.is_some());

    // A gate opened for the files there now lets them through.
    secret.swap_files(&pair(&second, &second));
    let renewed = referenced.effective(&config);
    let (outcome, about) = apply!(Some(&renewed));
    assert_eq!(outcome, Outcome::Applied);
    assert_eq!(about.as_ref(), Some(&renewed));
    assert_eq!(proxy.status().effective_version, renewed);

    // Files that change between the validate and the reload: the reload
    // names the files as validated (If-Effective-Match) and is refused.
    let bytes = content.bytes.as_deref().expect("bytes");
    let (_, _, validated) = client.validate(bytes).await.expect("validate");
    assert_eq!(validated, renewed);
    secret.swap_files(&pair(&third, &third));
    let refused = client.reload(bytes, Some(&config), Some(&validated)).await;
    assert!(
        matches!(&refused, Err(CallError::Retry(e)) if e.contains("If-Effective-Match")),
        "{refused:?}"
    );
    assert_eq!(proxy.status().effective_version, renewed, "nothing applied");
    let (_, _, now) = client.validate(bytes).await.expect("validate");
    let applied = client.reload(bytes, Some(&config), Some(&now)).await;
    assert!(
        matches!(applied, Ok(Answer::Accepted { .. })),
        "{applied:?}"
    );
    assert_eq!(proxy.status().effective_version, now);
}
