//! The engine's use cases in-process, on ports of 127.0.0.1: validate
//! records its attempt, an applied reload is persisted through the hook and
//! nothing else is, and settings only a restart applies are reported on
//! every reload until then, an unchanged one included.

use std::sync::{Arc, Mutex};

use crate::config::{MemoryFiles, validate};
use crate::engine::{Engine, ReloadOutcome, ValidateOutcome};
use crate::metrics::Metrics;

mod admin_tls;
mod analysis;
mod attempts;
mod hostile_broker;
mod upstream_check;

/// A bootstrap port whose broker port (the next one) is free too.
fn free_ports() -> u16 {
    sluice_testkit::ports::ports(2)
}

fn config(port: u16, admin: &str, advertised: &str) -> String {
    format!(
        "admin: {{ listen: {admin} }}\nvirtualClusters:\n  - name: a\n    upstream: {{ bootstrapServers: [127.0.0.1:9] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: {advertised}, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n",
        port + 1
    )
}

/// An engine started on `text` (files from memory, none needed).
fn start(text: &str) -> Arc<Engine> {
    let valid = validate(text.as_bytes(), &MemoryFiles::default()).unwrap();
    Engine::start(
        valid,
        Arc::new(Metrics::new()),
        Arc::new(MemoryFiles::default()),
    )
    .unwrap()
}

#[tokio::test]
async fn validate_compares_with_the_configuration_in_force_and_records_the_attempt() {
    let port = free_ports();
    let engine = start(&config(port, "127.0.0.1:1", "localhost"));
    let next = config(port, "127.0.0.1:1", "proxy.local");
    let ValidateOutcome::Valid { changes, .. } = engine.validate(next.as_bytes()) else {
        panic!("valid");
    };
    assert_eq!(changes.modified[0].name, "a");
    let attempt = engine.status().last_validation_attempt.unwrap();
    assert_eq!(attempt.errors, 0);
    let ValidateOutcome::Invalid { errors, .. } = engine.validate(b"virtualClusters: [") else {
        panic!("invalid");
    };
    assert_eq!(
        engine.status().last_validation_attempt.unwrap().errors,
        errors.len()
    );
    assert_eq!(
        engine.clusters().clusters[0].generation,
        1,
        "nothing touched"
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn only_applied_reloads_are_persisted_and_a_restart_stays_required() {
    let port = free_ports();
    let engine = start(&config(port, "127.0.0.1:1", "localhost"));
    let persisted = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    let sink = Arc::clone(&persisted);
    assert!(
        engine
            .set_persist(Box::new(move |b| sink.lock().unwrap().push(b.to_vec())))
            .is_ok()
    );
    assert!(engine.set_persist(Box::new(|_| {})).is_err(), "one hook");

    let moved = config(port, "127.0.0.1:2", "localhost");
    let ReloadOutcome::Applied {
        restart_required, ..
    } = engine.reload(moved.as_bytes(), None)
    else {
        panic!("applied");
    };
    assert_eq!(restart_required.len(), 1, "{restart_required:?}");
    assert!(
        restart_required[0].starts_with("admin.listen changed from 127.0.0.1:1 to 127.0.0.1:2")
    );

    // Sent again: nothing to do, nothing persisted, the restart still due.
    let ReloadOutcome::Unchanged {
        unchanged,
        restart_required: still,
        ..
    } = engine.reload(moved.as_bytes(), None)
    else {
        panic!("unchanged");
    };
    assert_eq!(unchanged, vec!["a".to_owned()]);
    assert_eq!(still, restart_required);
    assert!(matches!(
        engine.reload(b"virtualClusters: [", None),
        ReloadOutcome::Rejected { .. }
    ));
    assert!(matches!(
        engine.reload(moved.as_bytes(), Some("sha256:other")),
        ReloadOutcome::PreconditionFailed { .. }
    ));
    assert_eq!(*persisted.lock().unwrap(), [moved.into_bytes()]);

    // Back where it started: nothing waits for a restart any more.
    let back = config(port, "127.0.0.1:1", "localhost");
    let ReloadOutcome::Applied {
        restart_required, ..
    } = engine.reload(back.as_bytes(), None)
    else {
        panic!("applied");
    };
    assert!(restart_required.is_empty());
    assert_eq!(persisted.lock().unwrap().len(), 2);
    engine.shutdown().await;
}

#[tokio::test]
async fn a_reload_applies_max_buffered_bytes_at_once() {
    let port = free_ports();
    let engine = start(&config(port, "127.0.0.1:1", "localhost"));
    let limit = |e: &Engine| {
        e.metrics().encode().lines().find_map(|l| {
            l.strip_prefix("sluice_max_buffered_bytes ")?
                .parse::<u64>()
                .ok()
        })
    };
    assert_eq!(limit(&engine), Some(268_435_456));
    let smaller = format!(
        "limits: {{ maxBufferedBytes: 2097152 }}\n{}",
        config(port, "127.0.0.1:1", "localhost")
    );
    let ReloadOutcome::Applied { changes, .. } = engine.reload(smaller.as_bytes(), None) else {
        panic!("applied");
    };
    assert!(
        changes.modified.is_empty(),
        "no cluster restarts: {changes:?}"
    );
    assert_eq!(limit(&engine), Some(2_097_152));
}
