//! `admin.tls` added or removed by a reload waits for a restart (the
//! listener's mode is fixed at start) and says so; a renewed pair does not.

use std::sync::Arc;

use sluice_testkit::certs::Ca;

use super::free_ports;
use crate::config::{MemoryFiles, validate};
use crate::engine::{Engine, ReloadOutcome};
use crate::metrics::Metrics;

fn config(port: u16, tls: bool) -> String {
    let tls = if tls {
        "\n  tls: { certFile: admin.crt, keyFile: admin.key }"
    } else {
        ""
    };
    format!(
        "admin:\n  listen: 127.0.0.1:1{tls}\nvirtualClusters:\n  - name: a\n    upstream: {{ bootstrapServers: [127.0.0.1:9] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n",
        port + 1
    )
}

fn restart_required(engine: &Arc<Engine>, text: &str) -> Vec<String> {
    match engine.reload(text.as_bytes(), None) {
        ReloadOutcome::Applied {
            restart_required, ..
        }
        | ReloadOutcome::Unchanged {
            restart_required, ..
        } => restart_required,
        other => panic!("applied or unchanged: {other:?}"),
    }
}

#[tokio::test]
async fn admin_tls_added_or_removed_waits_for_a_restart() {
    let leaf = Ca::new("admin CA").server("admin", 1);
    let files = MemoryFiles::default()
        .with("admin.crt", leaf.cert.as_bytes())
        .with("admin.key", leaf.key.as_bytes());
    let port = free_ports();
    let start = |tls: bool| {
        let valid = validate(config(port, tls).as_bytes(), &files).unwrap();
        Engine::start(valid, Arc::new(Metrics::new()), Arc::new(files.clone())).unwrap()
    };

    let plain = start(false);
    let due = restart_required(&plain, &config(port, true));
    assert_eq!(due.len(), 1, "{due:?}");
    assert!(due[0].starts_with("admin.tls added"), "{due:?}");
    plain.shutdown().await;

    let https = start(true);
    let due = restart_required(&https, &config(port, false));
    assert!(due[0].starts_with("admin.tls removed"), "{due:?}");
    assert!(restart_required(&https, &config(port, true)).is_empty());
    https.shutdown().await;
}
