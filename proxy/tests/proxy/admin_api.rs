//! The admin API in-process (`tower::ServiceExt::oneshot`, no sockets for
//! HTTP): who may call what, error shapes, and the validate endpoint's parity
//! with the configuration corpus. The caller's address is set per request,
//! which is how non-loopback callers are tested without leaving 127.0.0.1.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use sluice_proxy::admin::{AppState, router};
use sluice_proxy::config::{FileRoots, LocalFiles, validate};
use sluice_proxy::engine::Engine;
use sluice_proxy::metrics::Metrics;
use sluice_testkit::{corpus, ports};
use tower::ServiceExt;

fn config(port: u16, admin: &str) -> String {
    format!(
        "admin: {admin}\nvirtualClusters:\n  - name: a\n    upstream: {{ bootstrapServers: [127.0.0.1:9] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n",
        port + 1
    )
}

/// The token of every configuration with `tokenFile: token`.
pub(crate) const TOKEN: &str = "2f8a1c9e4b7d6a3f0e5c8b1d9a7f4e2c";

/// One engine and its admin router (built once: it registers the admin
/// API's metrics).
pub(crate) struct Api {
    pub(crate) state: AppState,
    pub(crate) router: Router,
    _dir: tempfile::TempDir,
}

impl Api {
    pub(crate) fn start(admin: &str, files_base: Option<&Path>) -> Api {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), format!("{TOKEN}\n")).unwrap();
        // The bootstrap port and its broker's, reserved for this process.
        let port = ports::ports(2);
        // The corpus reaches shared files with `..`: the repository is its root.
        let files = Arc::new(match files_base {
            Some(base) => LocalFiles::relative_to(base)
                .within(FileRoots::new([sluice_testkit::repo()]).unwrap()),
            None => LocalFiles::relative_to(dir.path()),
        });
        let text = config(port, admin);
        let valid = validate(text.as_bytes(), &LocalFiles::relative_to(dir.path())).unwrap();
        let engine = Engine::start(valid, Arc::new(Metrics::new()), files).unwrap();
        let state = AppState { engine };
        Api {
            router: router(state.clone()),
            state,
            _dir: dir,
        }
    }

    pub(crate) async fn call(
        &self,
        method: &str,
        path: &str,
        from: &str,
        auth: Option<&str>,
        body: Vec<u8>,
    ) -> (StatusCode, serde_json::Value, Option<String>) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(token) = auth {
            req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let mut req = req.body(Body::from(body)).unwrap();
        let peer: SocketAddr = from.parse().unwrap();
        req.extensions_mut().insert(ConnectInfo(peer));
        self.send(req).await
    }

    /// Sends `req` as-is (its `ConnectInfo` set by the caller).
    pub(crate) async fn send(
        &self,
        req: Request<Body>,
    ) -> (StatusCode, serde_json::Value, Option<String>) {
        let resp = self.router.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let challenge = resp
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .map(|v| v.to_str().unwrap().to_owned());
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        let json = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        (status, json, challenge)
    }
}

#[tokio::test]
async fn without_a_token_only_loopback_callers_may_mutate() {
    let api = Api::start("{ listen: 127.0.0.1:1 }", None);
    let body = api.state.engine.config().bytes.to_vec();
    let (status, json, _) = api
        .call(
            "POST",
            "/admin/config/validate",
            "10.0.0.7:4000",
            None,
            body.clone(),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        json["error"]
            .as_str()
            .unwrap()
            .contains("loopback callers only")
    );
    let (status, ..) = api
        .call(
            "POST",
            "/admin/config/reload",
            "10.0.0.7:4000",
            None,
            body.clone(),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, json, _) = api
        .call(
            "POST",
            "/admin/config/validate",
            "127.0.0.1:4000",
            None,
            body,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{json}");
    // Reading is open to everyone.
    let (status, ..) = api
        .call("GET", "/admin/config/status", "10.0.0.7:4000", None, vec![])
        .await;
    assert_eq!(status, StatusCode::OK);
}

/// With a token, every caller presents it, loopback included.
#[tokio::test]
async fn with_a_token_every_caller_must_present_it() {
    let api = Api::start("{ listen: 127.0.0.1:1, tokenFile: token }", None);
    let body = api.state.engine.config().bytes.to_vec();
    let (status, json, challenge) = api
        .call(
            "POST",
            "/admin/config/reload",
            "10.0.0.7:4000",
            None,
            body.clone(),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(json["error"], "a bearer token is required");
    assert_eq!(challenge.as_deref(), Some("Bearer"));
    let (status, json, _) = api
        .call(
            "POST",
            "/admin/config/reload",
            "10.0.0.7:4000",
            Some("wrong"),
            body.clone(),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(json["error"], "the bearer token is not valid");
    let (status, json, _) = api
        .call(
            "POST",
            "/admin/config/reload",
            "10.0.0.7:4000",
            Some(TOKEN),
            body.clone(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{json}");
    assert_eq!(json["changed"], false);
    let (status, json, _) = api
        .call(
            "POST",
            "/admin/config/reload",
            "[::1]:4000",
            None,
            body.clone(),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(json["error"], "a bearer token is required");
    let (status, ..) = api
        .call(
            "POST",
            "/admin/config/reload",
            "[::1]:4000",
            Some(TOKEN),
            body,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn errors_are_json_with_the_right_status() {
    let api = Api::start("{ listen: 127.0.0.1:1 }", None);
    let huge = vec![b'#'; 2 * 1024 * 1024];
    let (status, json, _) = api
        .call("POST", "/admin/config/validate", "127.0.0.1:1", None, huge)
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json["error"], "request body is larger than 1048576 bytes");
    let (status, json, _) = api
        .call("GET", "/admin/nope", "127.0.0.1:1", None, vec![])
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json["error"], "no such endpoint");
    let (status, json, _) = api
        .call(
            "POST",
            "/admin/config/validate",
            "127.0.0.1:1",
            None,
            b"virtualClusters: [".to_vec(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json["valid"], false);
    assert!(
        json["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid YAML")
    );
}

#[tokio::test]
async fn validate_reports_what_a_reload_would_change() {
    let api = Api::start("{ listen: 127.0.0.1:1 }", None);
    let current = String::from_utf8(api.state.engine.config().bytes.to_vec()).unwrap();
    let next = current.replace("localhost", "proxy.local");
    let (status, json, _) = api
        .call(
            "POST",
            "/admin/config/validate",
            "127.0.0.1:1",
            None,
            next.into_bytes(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{json}");
    assert_eq!(json["valid"], true);
    assert_eq!(json["changes"]["modified"][0]["name"], "a");
    assert_eq!(
        json["changes"]["modified"][0]["reasons"][0],
        "gateway.advertisedHost changed from localhost to proxy.local"
    );
    let (_, status, _) = api
        .call("GET", "/admin/config/status", "127.0.0.1:1", None, vec![])
        .await;
    assert_eq!(status["lastValidationAttempt"]["status"], "valid");
}

/// Offline parity: the validate endpoint gives, for every file of the
/// invalid corpus, exactly the errors of `sluice-proxy check` (the
/// `.expected` files, which the CLI test checks too).
#[tokio::test]
async fn validate_endpoint_matches_the_corpus_exactly() {
    let api = Api::start("{ listen: 127.0.0.1:1 }", Some(&corpus::invalid_dir()));
    let files = corpus::invalid();
    assert!(files.len() >= 40);
    for (file, expected) in files {
        let body = std::fs::read(&file).unwrap();
        let (status, json, _) = api
            .call("POST", "/admin/config/validate", "127.0.0.1:1", None, body)
            .await;
        let (want_status, got) = if json.is_null() {
            (status, vec![])
        } else {
            let errors = json["errors"].as_array().cloned().unwrap_or_default();
            let got: Vec<String> = errors
                .iter()
                .map(|e| {
                    let mut out = String::new();
                    if let Some(line) = e["line"].as_u64() {
                        out.push_str(&format!("{line}:{}: ", e["column"]));
                    }
                    if !e["path"].as_str().unwrap().is_empty() {
                        out.push_str(&format!("{}: ", e["path"].as_str().unwrap()));
                    }
                    out.push_str(e["message"].as_str().unwrap());
                    out
                })
                .collect();
            (status, got)
        };
        assert_eq!(want_status, StatusCode::BAD_REQUEST, "{}", file.display());
        assert_eq!(got, expected, "{}", file.display());
    }
}
