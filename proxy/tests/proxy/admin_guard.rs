//! The gate in front of the mutating admin endpoints, in-process: every
//! caller presents the configured token (loopback and a mesh sidecar's
//! 127.0.0.6 included), web pages and rebound names are refused, refusals
//! are counted, logged without the token and slowed, and every admitted
//! call leaves one audit line.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use sha2::{Digest, Sha256};
use sluice_proxy::admin::{FAILURE_DELAY, MAX_DELAYED};
use sluice_testkit::logs::Logs;

use super::admin_api::{Api, TOKEN};

const WITH_TOKEN: &str = "{ listen: 127.0.0.1:1, tokenFile: token }";
const WITHOUT_TOKEN: &str = "{ listen: 127.0.0.1:1 }";

/// A POST of the configuration in force, from `from`, with `headers`.
fn post(api: &Api, path: &str, from: &str, headers: &[(&str, &str)]) -> Request<Body> {
    let mut req = Request::builder().method("POST").uri(path);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let body = api.state.engine.config().bytes.to_vec();
    let mut req = req.body(Body::from(body)).unwrap();
    req.extensions_mut()
        .insert(ConnectInfo(from.parse::<std::net::SocketAddr>().unwrap()));
    req
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[tokio::test]
async fn loopback_and_a_mesh_sidecar_need_the_token() {
    let api = Api::start(WITH_TOKEN, None);
    // 127.0.0.6: where Istio's sidecar sends inbound traffic from.
    for from in ["127.0.0.1:4000", "127.0.0.6:4000", "[::1]:4000"] {
        let (status, json, _) = api
            .send(post(&api, "/admin/config/validate", from, &[]))
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{from}: {json}");
        let auth = bearer(TOKEN);
        let req = post(
            &api,
            "/admin/config/validate",
            from,
            &[("authorization", &auth)],
        );
        let (status, json, _) = api.send(req).await;
        assert_eq!(status, StatusCode::OK, "{from}: {json}");
    }
}

#[tokio::test]
async fn a_web_page_is_refused_even_with_the_token_and_a_rebound_name_never_has_it() {
    let api = Api::start(WITH_TOKEN, None);
    let auth = bearer(TOKEN);
    // A browser's CSRF: a simple text/plain POST from another origin.
    let csrf = [
        ("authorization", auth.as_str()),
        ("content-type", "text/plain"),
        ("origin", "http://evil.example"),
    ];
    let (status, json, _) = api
        .send(post(&api, "/admin/config/reload", "127.0.0.1:4000", &csrf))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{json}");
    assert!(json["error"].as_str().unwrap().contains("Origin"), "{json}");
    // DNS rebinding: the page's own name, resolved to this proxy. The page
    // cannot present the token.
    let rebound = [("host", "evil.example:9190")];
    let (status, json, _) = api
        .send(post(
            &api,
            "/admin/config/reload",
            "127.0.0.1:4000",
            &rebound,
        ))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{json}");
    // An operator naming the proxy by its Service, with the token.
    let service = [
        ("authorization", auth.as_str()),
        ("host", "sluice-proxy.kafka-proxy.svc:9190"),
    ];
    let (status, json, _) = api
        .send(post(
            &api,
            "/admin/config/reload",
            "10.0.0.7:4000",
            &service,
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{json}");
    // Without a token configured, a rebound name is refused outright.
    let open = Api::start(WITHOUT_TOKEN, None);
    let (status, json, _) = open
        .send(post(
            &open,
            "/admin/config/reload",
            "127.0.0.1:4000",
            &rebound,
        ))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{json}");
    assert!(json["error"].as_str().unwrap().contains("Host"), "{json}");
    // Reading stays open: a browser on status changes nothing.
    let mut req = Request::builder()
        .uri("/admin/config/status")
        .header("origin", "http://evil.example")
        .body(Body::empty())
        .unwrap();
    req.extensions_mut().insert(ConnectInfo(
        "10.0.0.7:1".parse::<std::net::SocketAddr>().unwrap(),
    ));
    assert_eq!(api.send(req).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_refused_token_is_counted_logged_without_it_and_slowed() {
    let api = Api::start(WITH_TOKEN, None);
    let (logs, _guard) = Logs::capture();
    let guess = "guessed-token-0123456789abcdef-guess";
    let auth = bearer(guess);
    let started = Instant::now();
    let (status, ..) = api
        .send(post(
            &api,
            "/admin/config/reload",
            "10.0.0.7:4000",
            &[("authorization", &auth)],
        ))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        started.elapsed() >= FAILURE_DELAY - Duration::from_millis(50),
        "answered after {:?}",
        started.elapsed()
    );
    let metrics = api.state.engine.metrics().encode();
    assert!(
        metrics.contains("sluice_admin_auth_failures_total{reason=\"wrong_token\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("sluice_admin_auth_failures_total{reason=\"missing_token\"} 0"),
        "{metrics}"
    );
    let text = logs.text();
    let line = text
        .lines()
        .find(|l| l.contains("admin call refused"))
        .unwrap_or_else(|| panic!("no refusal logged:\n{text}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("10.0.0.7:4000"), "{line}");
    assert!(line.contains("wrong_token"), "{line}");
    assert!(!text.contains(guess), "the guess was logged:\n{text}");
}

#[tokio::test]
async fn every_admitted_mutating_call_leaves_an_audit_line() {
    let api = Api::start(WITH_TOKEN, None);
    let (logs, _guard) = Logs::capture();
    let auth = bearer(TOKEN);
    for path in ["/admin/config/validate", "/admin/config/reload"] {
        let req = post(&api, path, "10.0.0.7:4000", &[("authorization", &auth)]);
        assert_eq!(api.send(req).await.0, StatusCode::OK);
    }
    let version = api.state.engine.config().version.to_string();
    let digest = Sha256::digest(format!("sluice-admin-token:{TOKEN}"));
    let fingerprint: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    let text = logs.text();
    let audit: Vec<&str> = text.lines().filter(|l| l.contains("admin call")).collect();
    assert_eq!(audit.len(), 2, "{text}");
    for (line, (endpoint, outcome)) in audit.iter().zip([
        ("/admin/config/validate", "valid"),
        ("/admin/config/reload", "unchanged"),
    ]) {
        assert!(line.contains(" INFO "), "{line}");
        for part in ["10.0.0.7:4000", &fingerprint, &version, endpoint, outcome] {
            assert!(line.contains(part), "{part} missing: {line}");
        }
    }
    assert!(!text.contains(TOKEN), "the token was logged:\n{text}");
}

/// Refused tokens wait their delay at most `MAX_DELAYED` at a time: the
/// rest queue behind them (the connection cap bounds the queue).
#[tokio::test]
async fn refused_tokens_are_slowed_a_bounded_number_at_a_time() {
    let api = Api::start(WITH_TOKEN, None);
    let auth = bearer("guessed-token-0123456789abcdef-guess");
    let calls = (0..MAX_DELAYED + 1).map(|_| {
        let req = post(
            &api,
            "/admin/config/validate",
            "10.0.0.7:4000",
            &[("authorization", &auth)],
        );
        api.send(req)
    });
    let started = Instant::now();
    let answers = futures_util::future::join_all(calls).await;
    let took = started.elapsed();
    assert!(answers.iter().all(|(s, ..)| *s == StatusCode::UNAUTHORIZED));
    // One more than the slots: a second round of the delay.
    assert!(
        took >= FAILURE_DELAY * 2 - Duration::from_millis(50),
        "{took:?}"
    );
    assert!(took < FAILURE_DELAY * 3, "{took:?}");
}
