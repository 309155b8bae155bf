//! The admin token against a stand-in proxy on `127.0.0.1:0` that checks
//! bearer tokens like the real one: status reads (this pod's proxy, a
//! peer's) never carry the token; validate and reload do, and a token
//! rotated in its file is picked up after one 401, without a restart.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use sluice_admin_api::{ConfigStatus, ValidateAnswer, endpoints};
use sluice_watcher::client::{Answer, CallError, ProxyClient};
use sluice_watcher::token::Token;

const OLD: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
const NEW: &str = "f0e1d2c3b4a5968778695a4b3c2d1e0f";

/// Every request's path and bearer token.
type Seen = Vec<(String, Option<String>)>;

/// The token the stand-in accepts, and what it saw.
#[derive(Clone, Default)]
struct Proxy {
    accepts: Arc<Mutex<String>>,
    seen: Arc<Mutex<Seen>>,
}

impl Proxy {
    fn record(&self, path: &str, headers: &HeaderMap) -> Option<String> {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned);
        self.seen
            .lock()
            .unwrap()
            .push((path.to_owned(), bearer.clone()));
        bearer
    }

    fn seen(&self) -> Seen {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

async fn status(State(p): State<Proxy>, headers: HeaderMap) -> Response {
    p.record(endpoints::STATUS, &headers);
    let version = sluice_volume::config_version(b"proxy.yaml");
    let effective = sluice_volume::effective_version(&version, []);
    axum::Json(ConfigStatus::running(version, effective)).into_response()
}

async fn validate(State(p): State<Proxy>, headers: HeaderMap) -> Response {
    let bearer = p.record(endpoints::VALIDATE, &headers);
    if bearer.as_deref() != Some(p.accepts.lock().unwrap().as_str()) {
        let body = br#"{"error":"the bearer token is not valid"}"#.to_vec();
        return (StatusCode::UNAUTHORIZED, body).into_response();
    }
    let version = sluice_volume::config_version(b"proxy.yaml");
    let effective = sluice_volume::effective_version(&version, []);
    let answer = ValidateAnswer::valid(version, Default::default(), Vec::new(), effective);
    axum::Json(answer).into_response()
}

async fn start(proxy: &Proxy) -> String {
    let app = Router::new()
        .route(endpoints::STATUS, get(status))
        .route(endpoints::VALIDATE, post(validate))
        .with_state(proxy.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn valid() -> Answer {
    Answer::Accepted {
        restart_required: Vec::new(),
        clusters_failed: Vec::new(),
    }
}

#[tokio::test]
async fn status_reads_never_carry_the_token_and_mutating_calls_do() {
    let proxy = Proxy::default();
    *proxy.accepts.lock().unwrap() = OLD.to_owned();
    let base = start(&proxy).await;
    let client = ProxyClient::new(&base, Some(OLD.to_owned())).unwrap();
    client.status().await.expect("status");
    let (answer, ..) = client.validate(b"x").await.expect("validate");
    assert_eq!(answer, valid());
    assert_eq!(
        proxy.seen(),
        vec![
            (endpoints::STATUS.to_owned(), None),
            (endpoints::VALIDATE.to_owned(), Some(OLD.to_owned())),
        ]
    );
}

#[tokio::test]
async fn a_rotated_token_is_picked_up_after_one_401_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{OLD}\n")).unwrap();
    let proxy = Proxy::default();
    *proxy.accepts.lock().unwrap() = OLD.to_owned();
    let base = start(&proxy).await;
    let token = Arc::new(Token::from_file(&file).unwrap());
    let client = ProxyClient::with_token(&base, Some(Arc::clone(&token))).unwrap();
    assert_eq!(client.validate(b"x").await.expect("validate").0, valid());
    // The rotation: a new token in the file and in force in the proxy.
    std::fs::write(&file, format!("{NEW}\n")).unwrap();
    *proxy.accepts.lock().unwrap() = NEW.to_owned();
    assert_eq!(client.validate(b"x").await.expect("validate").0, valid());
    assert_eq!(client.validate(b"x").await.expect("validate").0, valid());
    let bearers: Vec<Option<String>> = proxy.seen().into_iter().map(|(_, b)| b).collect();
    let expected = [OLD, OLD, NEW, NEW].map(|t| Some(t.to_owned()));
    assert_eq!(bearers, expected, "one refused call, then the new token");
    assert_eq!(token.current(), NEW);
    // A token the proxy refuses that the file does not replace: the 401 stands.
    *proxy.accepts.lock().unwrap() = "another".to_owned();
    match client.validate(b"x").await {
        Err(CallError::Fatal(e)) => assert!(e.contains("401"), "{e}"),
        other => panic!("expected the 401, got {other:?}"),
    }
    assert_eq!(proxy.seen().len(), 1, "no retry with the same token");
}
