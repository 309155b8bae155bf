//! The reload answers' JSON.

use super::*;
use crate::roundtrip::roundtrip;

fn read_back(status: u16, json: &str) -> ReloadAnswer {
    let answer = ReloadAnswer::from_http(status, json.as_bytes()).unwrap();
    assert_eq!(answer.status(), status);
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        serde_json::from_str::<serde_json::Value>(json).unwrap()
    );
    answer
}

#[test]
fn applied_roundtrips() {
    let json = r#"{"success": true, "changed": true, "configVersion": "sha256:ab00000000000000000000000000000000000000000000000000000000000000",
        "clustersAdded": ["new"], "clustersRemoved": [],
        "clustersModified": [{"name": "a", "reasons": ["tls changed"]}],
        "clustersRotated": [{"name": "r", "reasons": ["gateway.tls.certFile content changed"]}],
        "clustersUnchanged": ["steady"], "durationMs": 12.5,
        "restartRequired": ["admin.listen changed from 127.0.0.1:9190 to 127.0.0.1:9191"],
        "clustersFailed": [{"name": "b", "error": "bind 127.0.0.1:9092: address in use",
            "since": "2025-01-02T03:04:05.678Z", "sinceCurrentVersion": true}]}"#;
    let a: ReloadApplied = roundtrip(json);
    assert_eq!(read_back(200, json), ReloadAnswer::Applied(a));
}

#[test]
fn unchanged_roundtrips_and_older_answers_still_read() {
    let json = r#"{"success": true, "changed": false, "configVersion": "sha256:ab00000000000000000000000000000000000000000000000000000000000000",
        "clustersAdded": [], "clustersRemoved": [], "clustersModified": [],
        "clustersRotated": [],
        "clustersUnchanged": ["a", "b"], "durationMs": 0.0, "restartRequired": [],
        "clustersFailed": []}"#;
    roundtrip::<ReloadApplied>(json);
    let old = r#"{"success": true, "changed": false, "configVersion": "sha256:ab00000000000000000000000000000000000000000000000000000000000000",
        "clustersAdded": [], "clustersRemoved": [], "clustersModified": [], "durationMs": 0}"#;
    let ReloadAnswer::Applied(a) = ReloadAnswer::from_http(200, old.as_bytes()).unwrap() else {
        panic!("not applied");
    };
    assert!(a.clusters_unchanged.is_empty() && a.restart_required.is_empty());
    assert!(a.clusters_failed.is_empty());
}

#[test]
fn rejected_roundtrips() {
    let json = r#"{"success": false, "valid": false, "configVersion": "sha256:cd00000000000000000000000000000000000000000000000000000000000000",
        "errors": [{"line": 3, "column": 5, "path": "virtualClusters[0].name", "message": "bad"}]}"#;
    let r: ReloadRejected = roundtrip(json);
    let answer = ReloadAnswer::rejected(r.config_version.clone(), r.errors.clone());
    assert_eq!(read_back(400, json), answer);
}

#[test]
fn busy_roundtrips() {
    let json = r#"{"success": false, "error": "another reload is in progress",
        "inProgressSince": "2025-01-02T03:04:05.678Z"}"#;
    let b: ReloadBusy = roundtrip(json);
    assert_eq!(
        read_back(409, json),
        ReloadAnswer::busy(b.in_progress_since)
    );
}

#[test]
fn not_applied_roundtrips() {
    let json = r#"{"success": false,
        "error": "If-Match does not name the configuration version in force",
        "configVersion": "sha256:ef00000000000000000000000000000000000000000000000000000000000000"}"#;
    let n: ReloadNotApplied = roundtrip(json);
    assert_eq!(
        read_back(412, json),
        ReloadAnswer::precondition_failed(n.config_version)
    );
    let json = r#"{"success": false, "error": "virtual cluster a: bind 127.0.0.1:9092: address in use",
        "configVersion": "sha256:ef00000000000000000000000000000000000000000000000000000000000000"}"#;
    let n: ReloadNotApplied = roundtrip(json);
    assert_eq!(
        read_back(500, json),
        ReloadAnswer::failed(n.error, n.config_version, Vec::new())
    );
    assert!(!n.upstream_check.is_empty() || !read_back_final(json));
    let json = r#"{"success": false, "error": "virtual cluster a: upstream check failed: k:9092: connection refused",
        "configVersion": "sha256:ef00000000000000000000000000000000000000000000000000000000000000",
        "upstreamCheck": [{"cluster": "a", "address": "k:9092", "cause": "connection refused"}]}"#;
    let n: ReloadNotApplied = roundtrip(json);
    assert!(n.is_final());
    assert_eq!(n.upstream_check[0].cause, "connection refused");
}

#[test]
fn shutting_down_roundtrips() {
    let ReloadAnswer::ShuttingDown(n) = ReloadAnswer::shutting_down(
        "sha256:ef00000000000000000000000000000000000000000000000000000000000000"
            .parse()
            .unwrap(),
    ) else {
        panic!("not 503");
    };
    let json = serde_json::to_string(&n).unwrap();
    assert_eq!(
        read_back(503, &json),
        ReloadAnswer::shutting_down(
            "sha256:ef00000000000000000000000000000000000000000000000000000000000000"
                .parse()
                .unwrap()
        )
    );
}

fn read_back_final(json: &str) -> bool {
    matches!(read_back(500, json), ReloadAnswer::Failed(n) if n.is_final())
}

#[test]
fn other_answers_are_refusals() {
    let bug = ReloadAnswer::from_http(500, br#"{"error": "internal error; see the proxy's log"}"#);
    assert_eq!(
        bug,
        Err(Refused {
            status: 500,
            message: "internal error; see the proxy's log".into()
        })
    );
    assert_eq!(
        ReloadAnswer::from_http(403, br#"{"error": "no"}"#)
            .unwrap_err()
            .status,
        403
    );
}

#[test]
fn a_numbered_failure_names_its_attempt_and_version() {
    let json = r#"{"success": false, "error": "virtual cluster a: bind 127.0.0.1:9092: address in use",
        "configVersion": "sha256:ef00000000000000000000000000000000000000000000000000000000000000",
        "requestedVersion": "sha256:ab00000000000000000000000000000000000000000000000000000000000000",
        "attempt": 7}"#;
    let answer = read_back(500, json);
    let ReloadAnswer::Failed(n) = &answer else {
        panic!("not 500");
    };
    assert_eq!(answer.attempt(), 7);
    let requested = n.requested_version.clone();
    assert_eq!(
        requested.as_ref().map(|v| v.as_str()),
        Some("sha256:ab00000000000000000000000000000000000000000000000000000000000000")
    );
    let built = ReloadAnswer::failed(n.error.clone(), n.config_version.clone(), Vec::new())
        .numbered(7, requested);
    assert_eq!(built, answer);
    let busy = ReloadAnswer::busy("2025-01-02T03:04:05.678Z".to_owned()).numbered(8, None);
    assert_eq!(busy.attempt(), 8);
}

#[test]
fn an_applied_reload_names_its_attempt_too() {
    let json = r#"{"success": true, "changed": false,
        "configVersion": "sha256:ab00000000000000000000000000000000000000000000000000000000000000",
        "clustersAdded": [], "clustersRemoved": [], "clustersModified": [], "clustersRotated": [],
        "clustersUnchanged": ["a"], "durationMs": 0.0, "restartRequired": [], "clustersFailed": [],
        "attempt": 9}"#;
    let answer = read_back(200, json);
    assert_eq!(answer.attempt(), 9);
    let ReloadAnswer::Applied(mut a) = answer.clone() else {
        panic!("not 200");
    };
    a.attempt = 0;
    assert_eq!(ReloadAnswer::Applied(a).numbered(9, None), answer);
}
