//! AdmissionReview bodies: what the API server sends (`admission.k8s.io/v1`
//! only), and the review that answers it, echoing the request's uid,
//! apiVersion and kind as the API server requires.

use kube::core::DynamicObject;
use kube::core::admission::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, META_API_VERSION_V1, META_KIND,
};
use kube::core::response::StatusSummary;

use crate::decide::{Decision, Policy, decide};

/// The review sent back: a response and no request.
pub type AdmissionAnswer = AdmissionReview<DynamicObject>;

/// The body is not an AdmissionReview this webhook can answer.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// Not JSON, or JSON without the fields of an AdmissionReview.
    #[error("body is not an AdmissionReview: {0}")]
    Json(#[source] serde_json::Error),
    /// Another apiVersion than `admission.k8s.io/v1`.
    #[error(
        "apiVersion {0:?} is not supported: register the webhook with admissionReviewVersions [v1]"
    )]
    Version(String),
    /// Another kind than `AdmissionReview`.
    #[error("kind {0:?} is not AdmissionReview")]
    Kind(String),
    /// A review without a request (a response sent back, say).
    #[error("the AdmissionReview has no request")]
    NoRequest,
}

/// Parses a review and checks its apiVersion and kind.
pub fn parse(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, ReviewError> {
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_slice(body).map_err(ReviewError::Json)?;
    if review.types.api_version != META_API_VERSION_V1 {
        return Err(ReviewError::Version(review.types.api_version));
    }
    if review.types.kind != META_KIND {
        return Err(ReviewError::Kind(review.types.kind));
    }
    review.try_into().map_err(|_| ReviewError::NoRequest)
}

/// The review answering `req` with `decision`.
pub fn respond(req: &AdmissionRequest<DynamicObject>, decision: &Decision) -> AdmissionAnswer {
    let mut response = AdmissionResponse::from(req);
    match decision {
        Decision::Skipped(_) => {}
        Decision::Allowed { warnings } => {
            if !warnings.is_empty() {
                response.warnings = Some(warnings.clone());
            }
        }
        Decision::Denied { message } => {
            response = response.deny(message);
            // The API server answers the denied call with this status: the
            // object is invalid (422), not forbidden (the 403 it picks for 0).
            response.result.status = Some(StatusSummary::Failure);
            response.result.code = 422;
            response.result.reason = "Invalid".to_owned();
        }
    }
    response.into_review()
}

/// Parses, decides and answers: the whole of `POST /validate` but the HTTP.
pub fn handle(
    body: &[u8],
    policy: &Policy,
) -> Result<(AdmissionRequest<DynamicObject>, Decision, AdmissionAnswer), ReviewError> {
    let req = parse(body)?;
    let decision = decide(&req, policy);
    let review = respond(&req, &decision);
    Ok((req, decision, review))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};
    use sluice_config::PathsOnly;

    use super::*;

    fn policy() -> Policy {
        Policy::new("proxy.yaml", 20, Arc::new(PathsOnly))
    }

    fn review(api_version: &str, data: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": api_version,
            "kind": "AdmissionReview",
            "request": {
                "uid": "d1c1f1b6-0000-4000-8000-000000000001",
                "kind": { "group": "", "version": "v1", "kind": "ConfigMap" },
                "resource": { "group": "", "version": "v1", "resource": "configmaps" },
                "name": "p", "namespace": "n", "operation": "CREATE",
                "userInfo": {},
                "object": { "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "p" },
                            "data": { "proxy.yaml": data } }
            }
        }))
        .expect("json")
    }

    #[test]
    fn answers_echo_uid_api_version_and_kind() {
        let (_, decision, answer) = handle(
            &review("admission.k8s.io/v1", "drainTimeout: x\n"),
            &policy(),
        )
        .expect("parses");
        assert_eq!(decision.result(), "denied");
        let v: Value = serde_json::to_value(&answer).expect("json");
        assert_eq!(v["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(v["kind"], "AdmissionReview");
        assert_eq!(v["response"]["uid"], "d1c1f1b6-0000-4000-8000-000000000001");
        assert_eq!(v["response"]["allowed"], false);
        assert_eq!(v["response"]["status"]["code"], 422);
        let message = v["response"]["status"]["message"]
            .as_str()
            .expect("message");
        assert!(
            message.contains("\nproxy.yaml:1:15: drainTimeout: "),
            "{message}"
        );
        assert!(v.get("request").is_none());
    }

    #[test]
    fn other_versions_and_shapes_are_refused() {
        let old = handle(&review("admission.k8s.io/v1beta1", ""), &policy()).unwrap_err();
        assert!(matches!(old, ReviewError::Version(v) if v == "admission.k8s.io/v1beta1"));
        let no_request = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        assert!(matches!(
            handle(no_request, &policy()),
            Err(ReviewError::NoRequest)
        ));
        let wrong_kind = br#"{"apiVersion":"admission.k8s.io/v1","kind":"Pod"}"#;
        assert!(matches!(
            handle(wrong_kind, &policy()),
            Err(ReviewError::Kind(_))
        ));
        for junk in [
            &b""[..],
            b"{",
            b"[]",
            b"null",
            b"\xff\xfe",
            br#"{"apiVersion":1}"#,
        ] {
            assert!(
                matches!(handle(junk, &policy()), Err(ReviewError::Json(_))),
                "{junk:?}"
            );
        }
    }
}
