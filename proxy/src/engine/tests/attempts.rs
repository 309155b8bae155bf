//! Every reload attempt is numbered and recorded under its own version: a
//! SIGHUP reload in flight, an `If-Match` reload refused meanwhile, the
//! first's retry and a later reload each keep their own number and version
//! in what they return and in status (issue 33).

use std::convert::Infallible;
use std::net::TcpListener;
use std::sync::mpsc;

use sluice_admin_api::{AttemptedVersion, ReloadStatus};

use super::{config, free_ports, start};
use crate::engine::{Attempted, Preconditions, ReloadOutcome};

fn version(text: &str) -> AttemptedVersion {
    crate::config::config_version(text.as_bytes()).into()
}

#[tokio::test]
async fn interleaved_attempts_keep_their_own_number_and_version() {
    let port = free_ports();
    let running = config(port, "127.0.0.1:1", "localhost");
    let engine = start(&running);
    // Its bootstrap port is taken: reloading it fails while preparing.
    let taken = free_ports();
    let _intruder = TcpListener::bind(("127.0.0.1", taken)).unwrap();
    let failing = config(taken, "127.0.0.1:1", "localhost");
    let next = config(port, "127.0.0.1:1", "proxy.local");
    let in_force = engine.status().current_config_version;

    let (entered, wait_entered) = mpsc::channel();
    let (release, wait_release) = mpsc::channel::<()>();
    let (first, busy) = std::thread::scope(|s| {
        let sighup = s.spawn(|| {
            let bytes = failing.clone().into_bytes();
            engine.reload_reading(move || {
                entered.send(()).unwrap();
                wait_release.recv().unwrap();
                Ok::<_, Infallible>(bytes)
            })
        });
        wait_entered.recv().unwrap();
        let pre = Preconditions {
            config: Some(in_force.as_str()),
            effective: None,
        };
        let busy = engine.attempt_reload(next.as_bytes(), pre);
        release.send(()).unwrap();
        (sighup.join().unwrap().unwrap(), busy)
    });
    assert_eq!(first.attempt, 1);
    assert!(
        matches!(first.outcome, ReloadOutcome::Failed { .. }),
        "{first:?}"
    );
    assert_eq!(first.version, Some(version(&failing)));
    assert_eq!(busy.attempt, 2);
    assert!(
        matches!(busy.outcome, ReloadOutcome::Busy { .. }),
        "{busy:?}"
    );
    assert_eq!(busy.version, None, "refused before it read anything");
    assert_recorded(&engine, &first, ReloadStatus::Failed);
    assert_eq!(
        engine.status().last_failed_version.unwrap().version,
        version(&failing)
    );

    let retried = engine.attempt_reload(failing.as_bytes(), Preconditions::default());
    assert_eq!(retried.attempt, 3);
    assert_eq!(retried.version, Some(version(&failing)));
    assert_recorded(&engine, &retried, ReloadStatus::Failed);

    let pre = Preconditions {
        config: Some(in_force.as_str()),
        effective: None,
    };
    let applied = engine.attempt_reload(next.as_bytes(), pre);
    assert_eq!(applied.attempt, 4);
    assert!(
        matches!(applied.outcome, ReloadOutcome::Applied { .. }),
        "{applied:?}"
    );
    assert_recorded(&engine, &applied, ReloadStatus::Applied);
    assert_eq!(
        engine.status().last_failed_version.unwrap().version,
        version(&failing),
        "the failure stays the failing version's"
    );

    engine.validate(b"virtualClusters: [");
    let validation = engine.status().last_validation_attempt.unwrap();
    assert_eq!(validation.attempt, 5, "validations share the sequence");
    assert_eq!(engine.status().last_reload_attempt.unwrap().attempt, 4);
    engine.shutdown().await;
}

/// Status' last reload attempt is `done`: its number, version and status.
fn assert_recorded(engine: &crate::engine::Engine, done: &Attempted, status: ReloadStatus) {
    let last = engine.status().last_reload_attempt.unwrap();
    assert_eq!(last.attempt, done.attempt);
    assert_eq!(last.requested_version, done.version);
    assert_eq!(last.status, status);
}
