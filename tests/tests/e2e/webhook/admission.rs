//! One fixture per scenario, sent over HTTPS to the real binary; then the
//! HTTP edges (content type, size, malformed JSON, timeouts), probes,
//! metrics, file checks and graceful shutdown.

use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::harness::{Pki, Webhook, fixture, fixture_json, leaf, new_ca, review_with};

fn start(pki: &Pki, extra: &[&str]) -> Webhook {
    Webhook::start(&pki.cert, &pki.key, &pki.ca.pem, extra)
}

/// The `response` of an answer, after checking that it echoes the request's
/// uid, apiVersion and kind.
fn response(answer: &Value, sent: &str) -> Value {
    let sent = fixture_json(sent);
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(answer["kind"], "AdmissionReview");
    assert_eq!(answer["response"]["uid"], sent["request"]["uid"]);
    answer["response"].clone()
}

const INVALID_CREATE: [&str; 6] = [
    "proxy.yaml in ConfigMap kafka-proxy/sluice-proxy is not a valid proxy configuration (5 errors):",
    "proxy.yaml:1:15: drainTimeout: \"30 s\" is not a duration: write a whole number and a unit, ms, s, m or h (e.g. 30s)",
    "proxy.yaml:10:5: virtualClusters[1].upstream: required field is missing",
    "proxy.yaml:11:5: virtualClusters[1].upstrem: unknown field \"upstrem\", did you mean \"upstream\"?",
    "proxy.yaml:15:22: virtualClusters[1].gateway.bootstrapPort: port 19092 is already used by virtual cluster \"orders\"",
    "proxy.yaml:18:15: virtualClusters[1].filters[0].type: unknown filter type \"deny-api\", did you mean \"deny-apis\"?",
];

#[tokio::test]
async fn valid_create_is_allowed() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    let (status, answer) = webhook.review(fixture("valid-create.json")).await;
    assert_eq!(status, 200);
    let r = response(&answer, "valid-create.json");
    assert_eq!(r["allowed"], true);
    assert!(r.get("warnings").is_none(), "{r}");
    webhook.assert_clean_logs(&[]);
}

#[tokio::test]
async fn invalid_create_lists_every_error_with_its_line() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    let (status, answer) = webhook.review(fixture("invalid-create.json")).await;
    assert_eq!(status, 200);
    let r = response(&answer, "invalid-create.json");
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 422);
    assert_eq!(r["status"]["reason"], "Invalid");
    let message = r["status"]["message"].as_str().expect("a message");
    assert_eq!(message.lines().collect::<Vec<_>>(), INVALID_CREATE);
    webhook.assert_clean_logs(&[]);
}

/// A certificate moved to new paths, nothing else: the proxy swaps it into
/// the running generation, so the one warning says it applies in place.
#[tokio::test]
async fn update_that_only_rotates_certificates_warns_it_applies_in_place() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    let (status, answer) = webhook.review(fixture("update-rotation.json")).await;
    assert_eq!(status, 200);
    let r = response(&answer, "update-rotation.json");
    assert_eq!(r["allowed"], true);
    assert_eq!(
        r["warnings"],
        serde_json::json!([
            "cluster \"orders\" applies in place, no drain: gateway.tls.certFile changed, gateway.tls.keyFile changed"
        ]),
        "{r}"
    );
    webhook.assert_clean_logs(&[]);
}

#[tokio::test]
async fn update_warns_which_clusters_drain_leave_and_arrive() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    let (status, answer) = webhook.review(fixture("update-warnings.json")).await;
    assert_eq!(status, 200);
    let r = response(&answer, "update-warnings.json");
    assert_eq!(r["allowed"], true);
    assert_eq!(
        r["warnings"],
        serde_json::json!([
            "cluster \"orders\" will drain and restart: upstream.bootstrapServers changed",
            "cluster \"payments\" will be removed: its connections drain and close",
            "cluster \"audit\" will be added",
        ])
    );
    webhook.assert_clean_logs(&[]);
}

#[tokio::test]
async fn delete_is_allowed_without_checks() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    // The ConfigMap being deleted holds an invalid configuration.
    let (status, answer) = webhook.review(fixture("delete.json")).await;
    assert_eq!(status, 200);
    assert_eq!(response(&answer, "delete.json")["allowed"], true);
}

#[tokio::test]
async fn dry_run_is_judged_like_a_real_request() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    let (status, answer) = webhook.review(fixture("dry-run.json")).await;
    assert_eq!(status, 200);
    let r = response(&answer, "dry-run.json");
    assert_eq!(r["allowed"], false);
    let message = r["status"]["message"].as_str().expect("a message");
    assert_eq!(message.lines().collect::<Vec<_>>(), INVALID_CREATE);
}

#[tokio::test]
async fn a_config_map_without_the_key_is_denied_saying_so() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    let (_, answer) = webhook.review(fixture("missing-key.json")).await;
    let r = response(&answer, "missing-key.json");
    assert_eq!(r["allowed"], false);
    let message = r["status"]["message"].as_str().expect("a message");
    assert!(
        message.starts_with(
            "ConfigMap kafka-proxy/sluice-proxy has no key \"proxy.yaml\" in data or binaryData"
        ),
        "{message}"
    );
    // With --config-key naming the key it has, the same ConfigMap is fine.
    let other = start(&pki, &["--config-key", "proxy.yml"]);
    let (_, answer) = other.review(fixture("missing-key.json")).await;
    assert_eq!(response(&answer, "missing-key.json")["allowed"], true);
}

#[tokio::test]
async fn binary_data_is_decoded_and_validated() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    let (_, answer) = webhook.review(fixture("binary-data.json")).await;
    assert_eq!(response(&answer, "binary-data.json")["allowed"], true);
    let (_, answer) = webhook
        .review(review_with(b"drainTimeout: caf\xe9\n"))
        .await;
    let message = answer["response"]["status"]["message"]
        .as_str()
        .expect("a message");
    assert!(
        message.contains("\nproxy.yaml:1:18: file is not valid UTF-8"),
        "{message}"
    );
}

#[tokio::test]
async fn other_kinds_are_allowed_without_checks() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    let (status, answer) = webhook.review(fixture("wrong-kind.json")).await;
    assert_eq!(status, 200);
    assert_eq!(response(&answer, "wrong-kind.json")["allowed"], true);
}

#[tokio::test]
async fn malformed_json_gets_400_saying_why() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    let (status, answer) = webhook.review(fixture("malformed.json")).await;
    assert_eq!(status, 400);
    let error = answer["error"].as_str().expect("an error");
    assert!(
        error.starts_with("body is not an AdmissionReview: "),
        "{error}"
    );
    let mut v1beta1 = fixture_json("valid-create.json");
    v1beta1["apiVersion"] = "admission.k8s.io/v1beta1".into();
    let (status, answer) = webhook
        .review(serde_json::to_vec(&v1beta1).expect("json"))
        .await;
    assert_eq!(status, 400);
    assert!(
        answer["error"]
            .as_str()
            .expect("an error")
            .contains("admissionReviewVersions [v1]")
    );
    // Still serving.
    let (status, _) = webhook.review(fixture("valid-create.json")).await;
    assert_eq!(status, 200);
    webhook.assert_clean_logs(&[]);
}

#[tokio::test]
async fn an_update_of_two_full_config_maps_fits_and_a_larger_body_gets_413() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    // object and oldObject at the ConfigMap limit: 1 MiB each, padded in an
    // annotation so the configuration stays valid.
    let mut full = fixture_json("update-warnings.json");
    let pad = "x".repeat(1024 * 1024 - 4096);
    for side in ["object", "oldObject"] {
        full["request"][side]["metadata"]["annotations"]["example.com/padding"] =
            pad.clone().into();
    }
    let body = serde_json::to_vec(&full).expect("json");
    assert!(body.len() > 2 * 1024 * 1024 - 16 * 1024, "{}", body.len());
    let (status, answer) = webhook.review(body).await;
    assert_eq!(status, 200);
    assert_eq!(answer["response"]["allowed"], true);

    let mut over = fixture_json("valid-create.json");
    over["request"]["object"]["metadata"]["annotations"]["example.com/padding"] =
        "x".repeat(3 * 1024 * 1024).into();
    let (status, answer) = webhook
        .review(serde_json::to_vec(&over).expect("json"))
        .await;
    assert_eq!(status, 413);
    assert_eq!(answer["error"], "request body is larger than 3145728 bytes");
    webhook.assert_clean_logs(&[]);
}

#[tokio::test]
async fn other_content_types_get_415() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    for content_type in [
        "text/plain",
        "application/yaml",
        "application/x-www-form-urlencoded",
    ] {
        let (status, answer) = webhook
            .post(fixture("valid-create.json"), content_type)
            .await;
        assert_eq!(status, 415, "{content_type}");
        assert_eq!(
            answer["error"],
            format!("content type must be application/json, got {content_type}")
        );
    }
}

#[tokio::test]
async fn the_error_list_is_capped() {
    let pki = Pki::new();
    let webhook = start(&pki, &["--max-errors", "2"]);
    let (_, answer) = webhook.review(fixture("invalid-create.json")).await;
    let message = answer["response"]["status"]["message"]
        .as_str()
        .expect("a message");
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(lines[..3], INVALID_CREATE[..3]);
    assert_eq!(lines[3..], ["and 3 more errors"]);
}

#[tokio::test]
async fn probes_and_metrics_on_both_ports() {
    let pki = Pki::new();
    let webhook = start(&pki, &["--metrics-listen", "127.0.0.1:0"]);
    assert_eq!(
        webhook.get("/healthz").await,
        (200, r#"{"status":"ok"}"#.to_owned())
    );
    assert_eq!(
        webhook.get("/readyz").await,
        (200, r#"{"ready":true}"#.to_owned())
    );
    webhook.review(fixture("valid-create.json")).await;
    webhook.review(fixture("invalid-create.json")).await;
    webhook.review(fixture("wrong-kind.json")).await;
    webhook.review(fixture("malformed.json")).await;
    let (status, text) = webhook.get("/metrics").await;
    assert_eq!(status, 200);
    for line in [
        "sluice_webhook_admissions_total{result=\"allowed\"} 1",
        "sluice_webhook_admissions_total{result=\"denied\"} 1",
        "sluice_webhook_admissions_total{result=\"skipped\"} 1",
        "sluice_webhook_admissions_total{result=\"malformed\"} 1",
        "sluice_webhook_admission_duration_seconds_count 4",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from\n{text}"
        );
    }
    let expiry = text
        .lines()
        .find_map(|l| l.strip_prefix("sluice_webhook_certificate_expiry_timestamp_seconds "))
        .and_then(|v| v.parse::<i64>().ok())
        .expect("expiry gauge");
    assert!(expiry > 1_700_000_000, "{expiry}");

    // The same over plain HTTP on the metrics port.
    let plain = format!(
        "http://{}/metrics",
        webhook.metrics_addr.expect("metrics address")
    );
    let text = reqwest::get(&plain)
        .await
        .expect("plain GET")
        .text()
        .await
        .expect("body");
    assert!(
        text.contains("sluice_webhook_admissions_total{result=\"denied\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn plain_http_on_the_https_port_gets_nothing() {
    let pki = Pki::new();
    let webhook = start(&pki, &[]);
    let plain = format!("http://{}/healthz", webhook.addr);
    assert!(reqwest::get(&plain).await.is_err());
    webhook.assert_clean_logs(&[]);
}

#[tokio::test]
async fn a_silent_client_is_disconnected_after_the_read_timeout() {
    let pki = Pki::new();
    let webhook = start(&pki, &["--read-timeout", "500ms"]);
    let mut tcp = tokio::net::TcpStream::connect(webhook.addr)
        .await
        .expect("connect");
    let started = std::time::Instant::now();
    let mut buf = [0u8; 16];
    // No ClientHello: the server gives up on the handshake and closes.
    let read = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    assert!(started.elapsed() >= Duration::from_millis(400));
    let (_, metrics) = webhook.get("/metrics").await;
    assert!(
        metrics.contains("sluice_webhook_tls_handshake_failures_total 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn sigterm_stops_cleanly() {
    let pki = Pki::new();
    let mut webhook = start(&pki, &[]);
    webhook.review(fixture("valid-create.json")).await;
    let status = webhook.terminate(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
    webhook.wait_for("stopped", Duration::from_secs(1));
    webhook.assert_clean_logs(&[]);
}

#[test]
fn a_broken_certificate_stops_startup_with_exit_2() {
    let pki = Pki::new();
    let other = leaf(&new_ca(), 2);
    let dir = tempfile::tempdir().expect("tempdir");
    let wrong_key = dir.path().join("other.key");
    std::fs::write(&wrong_key, other.key).expect("write");
    let out = std::process::Command::new(sluice_testkit::bin("sluice-webhook"))
        .args(["--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(&pki.cert)
        .arg("--tls-key")
        .arg(&wrong_key)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("do not belong together"), "{stderr}");
}
