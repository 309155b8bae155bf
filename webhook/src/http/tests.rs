//! The routes in-process (`tower::ServiceExt::oneshot`, no sockets): status
//! codes and JSON errors of everything that is not a good review.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use sluice_config::PathsOnly;
use tower::ServiceExt;

use super::*;

fn state() -> AppState {
    AppState {
        policy: Arc::new(Policy::new("proxy.yaml", 20, Arc::new(PathsOnly))),
        metrics: Arc::new(Metrics::new()),
        ready: Arc::new(AtomicBool::new(true)),
        body_timeout: Duration::from_secs(5),
        reviews: AppState::review_slots(),
    }
}

async fn call(state: &AppState, req: Request<Body>) -> (StatusCode, Value) {
    let response = router(state.clone())
        .oneshot(req)
        .await
        .expect("infallible");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, value)
}

fn post(content_type: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut b = Request::post("/validate");
    if let Some(ct) = content_type {
        b = b.header(header::CONTENT_TYPE, ct);
    }
    b.body(body.into()).expect("request")
}

fn review() -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0d1f6d1e-4d5c-4b8e-9d6b-1d2b3c4d5e6f",
            "kind": { "group": "", "version": "v1", "kind": "ConfigMap" },
            "resource": { "group": "", "version": "v1", "resource": "configmaps" },
            "name": "p", "namespace": "n", "operation": "CREATE", "userInfo": {},
            "object": { "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "p" },
                        "data": { "proxy.yaml": "virtualClusters: []\n" } }
        }
    })
}

#[tokio::test]
async fn a_review_gets_a_review() {
    let s = state();
    let body = serde_json::to_vec(&review()).expect("json");
    let (status, v) = call(&s, post(Some("application/json; charset=utf-8"), body)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["response"]["uid"], "0d1f6d1e-4d5c-4b8e-9d6b-1d2b3c4d5e6f");
    assert_eq!(v["response"]["allowed"], false);
    assert!(
        s.metrics
            .encode()
            .contains("sluice_webhook_admissions_total{result=\"denied\"} 1")
    );
}

#[tokio::test]
async fn other_content_types_get_415() {
    let body = serde_json::to_vec(&review()).expect("json");
    for ct in [None, Some("text/plain"), Some("application/yaml")] {
        let (status, v) = call(&state(), post(ct, body.clone())).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{ct:?}");
        assert!(
            v["error"]
                .as_str()
                .expect("error")
                .starts_with("content type must be application/json")
        );
    }
}

#[tokio::test]
async fn malformed_bodies_get_400_saying_why() {
    let s = state();
    let (status, v) = call(&s, post(Some("application/json"), "{\"apiVersion\":")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let error = v["error"].as_str().expect("error");
    assert!(
        error.starts_with("body is not an AdmissionReview: "),
        "{error}"
    );
    let mut old = review();
    old["apiVersion"] = json!("admission.k8s.io/v1beta1");
    let (status, v) = call(
        &s,
        post(
            Some("application/json"),
            serde_json::to_vec(&old).expect("json"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        v["error"]
            .as_str()
            .expect("error")
            .contains("admissionReviewVersions [v1]")
    );
    assert!(
        s.metrics
            .encode()
            .contains("sluice_webhook_admissions_total{result=\"malformed\"} 2")
    );
}

#[tokio::test]
async fn bodies_over_the_limit_get_413() {
    let big = vec![b' '; MAX_BODY_BYTES + 1];
    let (status, v) = call(&state(), post(Some("application/json"), big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        v["error"],
        format!("request body is larger than {MAX_BODY_BYTES} bytes")
    );
}

/// A body whose bytes never come.
struct Silent;

impl axum::body::HttpBody for Silent {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::task::Poll::Pending
    }
}

#[tokio::test(start_paused = true)]
async fn a_body_that_does_not_arrive_gets_408() {
    let mut s = state();
    s.body_timeout = Duration::from_secs(3);
    let (status, v) = call(&s, post(Some("application/json"), Body::new(Silent))).await;
    assert_eq!(status, StatusCode::REQUEST_TIMEOUT);
    assert_eq!(v["error"], "request body was not received within 3s");
}

/// Finding 6: slow clients holding every slot do not queue more bodies;
/// the next review is refused at once (after [`QUEUE_WAIT`]) with 429.
#[tokio::test(start_paused = true)]
async fn reviews_beyond_the_cap_get_429_without_waiting_for_the_slow_ones() {
    let mut s = state();
    s.body_timeout = Duration::from_secs(30);
    let mut slow = Vec::new();
    for _ in 0..MAX_REVIEWS {
        let s = s.clone();
        slow.push(tokio::spawn(async move {
            call(&s, post(Some("application/json"), Body::new(Silent))).await
        }));
    }
    tokio::task::yield_now().await;
    let started = tokio::time::Instant::now();
    let (status, v) = call(&s, post(Some("application/json"), review().to_string())).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(v["error"], "too many reviews at once; retry");
    assert_eq!(started.elapsed(), QUEUE_WAIT);
    for task in slow {
        assert_eq!(task.await.unwrap().0, StatusCode::REQUEST_TIMEOUT);
    }
    // The slots are free again.
    let (status, _) = call(&s, post(Some("application/json"), review().to_string())).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn probes_and_metrics() {
    let s = state();
    let get = |p: &str| Request::get(p).body(Body::empty()).expect("request");
    assert_eq!(call(&s, get("/healthz")).await.0, StatusCode::OK);
    assert_eq!(call(&s, get("/readyz")).await.0, StatusCode::OK);
    s.ready.store(false, std::sync::atomic::Ordering::Relaxed);
    let (status, v) = call(&s, get("/readyz")).await;
    assert_eq!(
        (status, v),
        (StatusCode::SERVICE_UNAVAILABLE, json!({ "ready": false }))
    );
    let response = router(s.clone())
        .oneshot(get("/metrics"))
        .await
        .expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    let (status, v) = call(&s, get("/nope")).await;
    assert_eq!(
        (status, v),
        (
            StatusCode::NOT_FOUND,
            json!({ "error": "no such endpoint" })
        )
    );
    let plain = metrics_router(s.clone())
        .oneshot(get("/validate"))
        .await
        .expect("infallible");
    assert_eq!(plain.status(), StatusCode::NOT_FOUND);
}
