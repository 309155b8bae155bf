//! The outcome of a step belongs to the step's version: a previous step's
//! retry failing while this one is published (issue 33) is not its end.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sluice_admin_api::{
    AttemptedVersion, ConfigStatus, ConfigVersion, EffectiveVersion, FailedVersion, FailureStage,
    ReloadAttempt, ReloadStatus,
};
use sluice_testkit::config::version;
use sluice_testkit::volume::Volume;

use super::{Endpoints, Outcome, judge, publish};

/// Serves `body(n)` to the n-th request (from 0) on 127.0.0.1, for the
/// life of the test process; returns its address.
fn serve(body: impl Fn(usize) -> String + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let calls = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let text = body(calls.fetch_add(1, Ordering::SeqCst));
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    addr
}

fn config(text: &str) -> ConfigVersion {
    version(text).parse().expect("a version")
}

/// The proxy running `current`, whose last failure is `failed` (a port
/// taken) at `at`, also its last reload attempt.
fn status(current: &str, failed: &str, at: &str) -> ConfigStatus {
    let effective: EffectiveVersion = version(current).parse().expect("a version");
    let mut s = ConfigStatus::running(config(current), effective);
    let attempted = AttemptedVersion::from(config(failed));
    let reason = "virtual cluster intruder: bind 127.0.0.1:16781: Address already in use";
    s.last_failed_version = Some(FailedVersion {
        version: attempted.clone(),
        stage: FailureStage::Reload,
        reason: reason.to_owned(),
        timestamp: at.to_owned(),
    });
    s.last_reload_attempt = Some(ReloadAttempt {
        timestamp: at.to_owned(),
        status: ReloadStatus::Failed,
        requested_version: Some(attempted),
        duration_ms: 3,
        clusters_modified: Vec::new(),
        clusters_added: Vec::new(),
        clusters_removed: Vec::new(),
        error: Some(reason.to_owned()),
        attempt: 3,
    });
    s
}

const RUNNING: &str = "step 98";
const CONFLICT: &str = "step 99: conflict-occupied-port";
const NEXT: &str = "step 100: modify-limits";

#[test]
fn a_previous_steps_retry_failing_meanwhile_is_not_this_steps_failure() {
    // The proxy: step 99 failed before step 100 is published (the
    // baseline), its retry fails again after, then step 100 applies.
    let admin = serve(|n| {
        let s = match n {
            0 => status(RUNNING, CONFLICT, "t1"),
            1..=4 => status(RUNNING, CONFLICT, "t2"),
            _ => status(NEXT, CONFLICT, "t2"),
        };
        serde_json::to_string(&s).expect("json")
    });
    // The watcher counts that retry's failure after the baseline.
    let watcher = serve(|n| {
        let failed = if n == 0 { 4 } else { 5 };
        format!(
            "sluice_watcher_validation_rejections_total 0\n\
             sluice_watcher_reloads_total{{result=\"failed\"}} {failed}\n"
        )
    });
    let dir = tempfile::tempdir().expect("dir");
    let mut volume = Volume::create(dir.path(), "proxy.yaml", RUNNING.as_bytes());
    let ends = Endpoints { admin, watcher };
    let seen = publish(&mut volume, &ends, NEXT, Duration::from_secs(10));
    assert_eq!(seen.outcome, Outcome::Applied, "{seen:?}");
    assert_eq!(seen.detail, "");
}

#[test]
fn a_failure_counts_only_for_its_own_version_recorded_since_the_step_began() {
    let before = status(RUNNING, CONFLICT, "t1");
    let retried = status(RUNNING, CONFLICT, "t2");
    assert_eq!(judge(&version(NEXT), Some(&before), &retried), None);
    assert_eq!(judge(&version(CONFLICT), Some(&before), &before), None);
    let (outcome, detail) = judge(&version(CONFLICT), Some(&before), &retried).expect("ended");
    assert_eq!(outcome, Outcome::Failed);
    assert!(detail.contains("Address already in use"), "{detail}");
    let applied = status(NEXT, CONFLICT, "t2");
    let ended = judge(&version(NEXT), Some(&retried), &applied);
    assert_eq!(ended, Some((Outcome::Applied, String::new())));
}

#[test]
fn a_rejection_of_this_version_is_rejected_with_its_error_count() {
    let before = status(RUNNING, CONFLICT, "t1");
    let mut now = before.clone();
    let bad = AttemptedVersion::from(config(NEXT));
    now.last_failed_version = Some(FailedVersion {
        version: bad.clone(),
        stage: FailureStage::Validate,
        reason: "2 errors".to_owned(),
        timestamp: "t3".to_owned(),
    });
    now.last_validation_attempt = Some(sluice_admin_api::ValidationAttempt {
        timestamp: "t3".to_owned(),
        requested_version: Some(bad),
        status: sluice_admin_api::ValidationStatus::Invalid,
        errors: 2,
        attempt: 4,
    });
    let ended = judge(&version(NEXT), Some(&before), &now);
    assert_eq!(ended, Some((Outcome::Rejected, "2 error(s)".to_owned())));
}
