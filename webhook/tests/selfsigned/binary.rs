//! The `sluice-webhook` binary with `--self-signed`, finding the (recorded)
//! API server through a kubeconfig as it would outside a cluster: the
//! command line, the client inference and the log line of every change.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use sluice_testkit::process::Proc;

use super::apiserver::ApiServer;
use super::{cas, eventually, published, reviewer};

/// A kubeconfig whose one context points at `api`, trusting its CA.
fn kubeconfig(dir: &std::path::Path, api: &ApiServer) -> std::path::PathBuf {
    use base64::Engine as _;
    let path = dir.join("kubeconfig");
    let server = api.url();
    let ca = base64::engine::general_purpose::STANDARD.encode(api.ca_pem().expect("HTTPS"));
    let text = format!(
        "apiVersion: v1\nkind: Config\n\
         clusters: [{{name: recorded, cluster: {{server: \"{server}\", \
         certificate-authority-data: \"{ca}\"}}}}]\n\
         users: [{{name: recorded, user: {{}}}}]\n\
         contexts: [{{name: recorded, context: {{cluster: recorded, user: recorded}}}}]\n\
         current-context: recorded\n"
    );
    std::fs::write(&path, text).expect("write the kubeconfig");
    path
}

/// Waits for a JSON log line whose message is `message`; returns it.
fn logged(webhook: &mut Proc, message: &str) -> Value {
    let line = tokio::task::block_in_place(|| {
        webhook.wait_until(
            &format!("the log line {message:?}"),
            |l| serde_json::from_str::<Value>(l).is_ok_and(|v| v["message"] == message),
            Duration::from_secs(30),
        )
    });
    serde_json::from_str(&line).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_creates_publishes_renews_and_logs_each_step() {
    // Over HTTPS, as in a cluster: kube's rustls client in the binary.
    let api = ApiServer::start_https().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let port = sluice_testkit::ports::port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice-webhook"));
    cmd.args([
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--self-signed",
        "--secret=sluice-system/sluice-webhook-tls",
        "--webhook-configuration=sluice-webhook",
        "--cert-hosts=sluice-webhook.sluice-system.svc,127.0.0.1",
        "--cert-lifetime=6s",
        "--log-format=json",
    ])
    .env("KUBECONFIG", kubeconfig(dir.path(), &api))
    .env_remove("SLUICE_LOG")
    .env_remove("KUBERNETES_SERVICE_HOST");
    let mut webhook = Proc::spawn("sluice-webhook", cmd);

    let created = logged(&mut webhook, "created a CA and a serving certificate");
    assert_eq!(created["secret"], "sluice-system/sluice-webhook-tls");
    let patched = logged(&mut webhook, "patched the caBundle");
    assert_eq!(patched["webhooks"], 2);
    logged(&mut webhook, "webhook ready");
    let bundle = published(&api).expect("a caBundle");
    assert_eq!(cas(&bundle), 1);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    reviewer::review(addr, &bundle).await.expect("allowed");
    let (first, _) = reviewer::served(addr, &bundle).await.expect("served");

    logged(&mut webhook, "renewed the serving certificate");
    eventually("the renewed certificate", Duration::from_secs(10), || {
        let (bundle, first) = (bundle.clone(), first.clone());
        async move {
            let (serial, _) = reviewer::served(addr, &bundle).await.ok()?;
            (serial != first).then_some(())
        }
    })
    .await;
    reviewer::review(addr, &bundle).await.expect("allowed");

    let status = tokio::task::block_in_place(|| webhook.stop("TERM", Duration::from_secs(10)));
    assert_eq!(status.code(), Some(0));
    let warnings: Vec<String> = webhook
        .lines()
        .into_iter()
        .filter(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["level"] == "WARN" || v["level"] == "ERROR")
        })
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}
