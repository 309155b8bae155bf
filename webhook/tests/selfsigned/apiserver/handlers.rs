//! The API server's answers: the objects' routes and the `Status` bodies,
//! in the recorded shapes.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::{Cluster, PoisonError, Shared, recorded};

fn json(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// A `Status` answer in the recorded shape of `base` with this code,
/// reason and message.
fn status(
    base: &str,
    code: u16,
    reason: &str,
    message: String,
    kind: &str,
    name: &str,
) -> Response {
    let mut body = recorded(base);
    body["code"] = code.into();
    body["reason"] = reason.into();
    body["message"] = message.into();
    body["details"] = serde_json::json!({ "name": name, "kind": kind });
    json(StatusCode::from_u16(code).expect("status"), body)
}

fn not_found(name: &str) -> Response {
    let message = format!("secrets \"{name}\" not found");
    status("not-found.json", 404, "NotFound", message, "secrets", name)
}

fn conflict(kind: &str, name: &str) -> Response {
    let message = format!(
        "Operation cannot be fulfilled on {kind} \"{name}\": the object has been modified; \
         please apply your changes to the latest version and try again"
    );
    status("conflict.json", 409, "Conflict", message, kind, name)
}

/// Stores `object` as a new version.
fn bump(c: &mut Cluster, object: &mut Value) {
    c.version += 1;
    object["metadata"]["resourceVersion"] = c.version.to_string().into();
}

pub(super) async fn get_secret(
    State(s): State<Shared>,
    Path((_, name)): Path<(String, String)>,
) -> Response {
    let barrier = s.with(|c| {
        (c.held > 0).then(|| {
            c.held -= 1;
        })
    });
    if barrier.is_some() {
        let b = s
            .barrier
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(b) = b {
            b.wait().await;
        }
    }
    match s.with(|c| c.secret.clone()) {
        Some(secret) => json(StatusCode::OK, secret),
        None => not_found(&name),
    }
}

pub(super) async fn put_secret(
    State(s): State<Shared>,
    Path((_, name)): Path<(String, String)>,
    axum::Json(mut body): axum::Json<Value>,
) -> Response {
    s.with(|c| {
        let Some(current) = &c.secret else {
            return not_found(&name);
        };
        if c.read_only {
            let message = format!(
                "secrets \"{name}\" is forbidden: User \"system:serviceaccount:sluice-system:\
                 sluice-webhook\" cannot update resource \"secrets\" in API group \"\" in the \
                 namespace \"sluice-system\""
            );
            return status(
                "not-found.json",
                403,
                "Forbidden",
                message,
                "secrets",
                &name,
            );
        }
        // As the API server does: no resourceVersion is an unconditional
        // update, an old one is a conflict.
        let version = &body["metadata"]["resourceVersion"];
        if !version.is_null() && *version != current["metadata"]["resourceVersion"] {
            c.secret_conflicts += 1;
            return conflict("secrets", &name);
        }
        body["metadata"]["uid"] = current["metadata"]["uid"].clone();
        body["metadata"]["creationTimestamp"] = current["metadata"]["creationTimestamp"].clone();
        bump(c, &mut body);
        c.secret = Some(body.clone());
        json(StatusCode::OK, body)
    })
}

pub(super) async fn post_secret(
    State(s): State<Shared>,
    axum::Json(mut body): axum::Json<Value>,
) -> Response {
    s.with(|c| {
        let name = body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if c.secret.is_some() {
            let message = format!("secrets \"{name}\" already exists");
            return status(
                "conflict.json",
                409,
                "AlreadyExists",
                message,
                "secrets",
                &name,
            );
        }
        body["metadata"]["uid"] = "3f2b8c1d-6e4a-4b9f-a0c2-5d7e9f1b3a64".into();
        body["metadata"]["creationTimestamp"] = "2026-11-22T04:05:00Z".into();
        bump(c, &mut body);
        c.secret = Some(body.clone());
        json(StatusCode::CREATED, body)
    })
}

pub(super) async fn get_config(State(s): State<Shared>) -> Response {
    json(StatusCode::OK, s.with(|c| c.config.clone()))
}

pub(super) async fn patch_config(
    State(s): State<Shared>,
    headers: axum::http::HeaderMap,
    axum::Json(patch): axum::Json<Value>,
) -> Response {
    let merge = headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes() == b"application/merge-patch+json");
    if !merge {
        let message = "only merge patches are recorded here".to_owned();
        return status(
            "conflict.json",
            415,
            "UnsupportedMediaType",
            message,
            "",
            "",
        );
    }
    s.with(|c| {
        let wanted = &patch["metadata"]["resourceVersion"];
        if !wanted.is_null() && *wanted != c.config["metadata"]["resourceVersion"] {
            c.config_conflicts += 1;
            return conflict(
                "validatingwebhookconfigurations.admissionregistration.k8s.io",
                "sluice-webhook",
            );
        }
        let mut config = c.config.clone();
        merge_patch(&mut config, &patch);
        bump(c, &mut config);
        c.config = config.clone();
        json(StatusCode::OK, config)
    })
}

/// RFC 7386: objects merge key by key, `null` removes, anything else replaces.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let object = target.as_object_mut().expect("an object");
    for (key, value) in fields {
        if value.is_null() {
            object.remove(key);
        } else {
            merge_patch(object.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}
