use sluice_admin_api::{ConfigProblem, ReloadApplied};

use super::*;

fn version() -> sluice_admin_api::ConfigVersion {
    sluice_volume::config_version(b"proxy.yaml")
}

fn effective() -> sluice_admin_api::EffectiveVersion {
    sluice_volume::effective_version(&version(), [])
}

/// An answer's body, as the proxy writes it.
macro_rules! body {
    ($answer:expr) => {
        serde_json::to_vec(&$answer).unwrap()
    };
}

fn invalid() -> Vec<ConfigProblem> {
    vec![
        ConfigProblem {
            line: Some(3),
            column: Some(5),
            path: "a.b".into(),
            message: "bad".into(),
        },
        ConfigProblem {
            line: None,
            column: None,
            path: String::new(),
            message: "file is empty".into(),
        },
    ]
}

#[test]
fn an_upstream_check_failure_is_final_and_a_bind_failure_is_retried() {
    let check = sluice_admin_api::UpstreamCheckFailure {
        cluster: "a".into(),
        address: "127.0.0.1:1".into(),
        cause: "connection refused".into(),
    };
    let failed = ReloadAnswer::failed("check".into(), version(), vec![check]);
    assert!(matches!(
        reload_answer(500, &body!(failed)),
        Err(CallError::Fatal(_))
    ));
    let failed = ReloadAnswer::failed("bind".into(), version(), Vec::new());
    assert!(matches!(
        reload_answer(500, &body!(failed)),
        Err(CallError::Retry(_))
    ));
}

#[test]
fn answers_are_classified_by_status() {
    let lines = Answer::Invalid(vec!["3:5: a.b: bad".into(), "file is empty".into()]);
    let rejected =
        ValidateAnswer::invalid(version(), invalid(), vec!["ca.pem".into()], effective());
    assert_eq!(
        validate_answer(400, &body!(rejected)),
        Ok((lines.clone(), vec!["ca.pem".to_owned()], effective()))
    );
    let rejected = ReloadAnswer::rejected(version(), invalid());
    assert_eq!(reload_answer(400, &body!(rejected)), Ok(lines));
    let valid = ValidateAnswer::valid(version(), Default::default(), Vec::new(), effective());
    let accepted = Answer::Accepted {
        restart_required: Vec::new(),
        clusters_failed: Vec::new(),
    };
    assert_eq!(
        validate_answer(200, &body!(valid)),
        Ok((accepted, Vec::new(), effective()))
    );
    let refusal = br#"{"error": "x"}"#;
    for retry in [409, 412, 500, 503] {
        assert!(matches!(
            validate_answer(retry, refusal),
            Err(CallError::Retry(_))
        ));
        assert!(matches!(
            reload_answer(retry, refusal),
            Err(CallError::Retry(_))
        ));
    }
    for fatal in [401, 403, 404] {
        assert_eq!(
            reload_answer(fatal, refusal),
            Err(CallError::Fatal(format!("HTTP {fatal}: x")))
        );
    }
}

#[test]
fn reload_refusals_keep_the_proxys_reason() {
    let busy = ReloadAnswer::busy("2025-01-02T03:04:05.678Z".into());
    assert_eq!(
        reload_answer(409, &body!(busy)),
        Err(CallError::Retry(
            "HTTP 409: another reload is in progress".into()
        ))
    );
    let failed = ReloadAnswer::failed("virtual cluster a: bind".into(), version(), Vec::new());
    assert_eq!(
        reload_answer(500, &body!(failed)),
        Err(CallError::Retry("HTTP 500: virtual cluster a: bind".into()))
    );
}

#[test]
fn an_applied_reload_says_what_waits_for_a_restart() {
    let applied = ReloadApplied {
        success: true,
        changed: true,
        config_version: version(),
        clusters_added: Vec::new(),
        clusters_removed: Vec::new(),
        clusters_modified: Vec::new(),
        clusters_rotated: Vec::new(),
        clusters_unchanged: vec!["a".to_owned()],
        duration_ms: 1.5,
        restart_required: vec!["admin.listen changed".to_owned()],
        clusters_failed: Vec::new(),
        attempt: 7,
    };
    assert_eq!(
        reload_answer(200, &body!(ReloadAnswer::Applied(applied))),
        Ok(Answer::Accepted {
            restart_required: vec!["admin.listen changed".to_owned()],
            clusters_failed: Vec::new(),
        })
    );
}

#[test]
fn the_version_comes_from_the_status() {
    let json = format!(
        r#"{{"currentConfigVersion": "{}", "effectiveVersion": "{}",
            "appliedAt": "2025-01-02T03:04:05.678Z", "lastReloadAttempt": null,
            "lastValidationAttempt": null, "reloadInProgressSince": null}}"#,
        version(),
        effective()
    );
    assert_eq!(
        status_answer(200, json.as_bytes()).map(|s| s.current_config_version),
        Ok(version())
    );
    assert!(matches!(
        status_answer(200, b"{}"),
        Err(CallError::Fatal(_))
    ));
    assert!(matches!(
        status_answer(503, b"down"),
        Err(CallError::Retry(_))
    ));
}

#[test]
fn a_peers_configuration_is_taken_only_when_its_bytes_are_the_version_named() {
    let bytes = b"proxy.yaml".to_vec();
    let named = version();
    assert_eq!(
        config_answer(bytes.clone(), Some(named.as_str())),
        Ok((bytes.clone(), named.clone()))
    );
    assert!(matches!(
        config_answer(b"proxy.y".to_vec(), Some(named.as_str())),
        Err(CallError::Retry(_))
    ));
    assert!(matches!(
        config_answer(bytes, None),
        Err(CallError::Fatal(_))
    ));
}
