//! The upstream check inside a reload, in-process: a changed upstream where
//! nothing listens fails the reload with nothing changed and is kept in
//! status as the last failed version; `checkOnReload: false` skips it; a
//! change that leaves the upstream alone is not checked. Status tells added,
//! modified and removed clusters apart.

use sluice_admin_api::FailureStage;

use super::{free_ports as ports, start};
use crate::engine::ReloadOutcome;

/// A port where nothing listens (reserved for this process, never bound).
fn refused() -> u16 {
    sluice_testkit::ports::port()
}

fn config(port: u16, upstream: &str) -> String {
    format!(
        "virtualClusters:\n  - name: a\n    upstream: {upstream}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n",
        port + 1
    )
}

#[tokio::test]
async fn a_changed_upstream_where_nothing_listens_fails_the_reload_with_nothing_changed() {
    let port = ports();
    // Startup never checks: the proxy starts while its upstream is down.
    let engine = start(&config(port, "{ bootstrapServers: [127.0.0.1:9] }"));
    let before = engine.status().current_config_version;
    let generation = engine.clusters().clusters[0].generation;
    let dead = refused();
    let next = config(
        port,
        &format!("{{ bootstrapServers: [\"127.0.0.1:{dead}\"] }}"),
    );
    let ReloadOutcome::Failed {
        reason, upstream, ..
    } = engine.reload(next.as_bytes(), None)
    else {
        panic!("the upstream check must fail the reload");
    };
    assert_eq!(
        reason,
        format!("virtual cluster a: upstream check failed: 127.0.0.1:{dead}: connection refused")
    );
    assert_eq!(upstream.len(), 1);
    assert_eq!(upstream[0].cluster, "a");
    assert_eq!(upstream[0].address, format!("127.0.0.1:{dead}"));
    assert_eq!(upstream[0].cause, "connection refused");
    let status = engine.status();
    assert_eq!(status.current_config_version, before);
    assert_eq!(engine.clusters().clusters[0].generation, generation);
    let failed = status.last_failed_version.expect("kept in status");
    assert_eq!(failed.stage, FailureStage::UpstreamCheck);
    assert_eq!(
        failed.version,
        crate::config::config_version(next.as_bytes())
    );
}

#[tokio::test]
async fn check_on_reload_false_skips_the_check_and_an_untouched_upstream_is_not_checked() {
    let port = ports();
    let engine = start(&config(port, "{ bootstrapServers: [127.0.0.1:9] }"));
    let dead = refused();
    let skipped = config(
        port,
        &format!("{{ bootstrapServers: [\"127.0.0.1:{dead}\"], checkOnReload: false }}"),
    );
    assert!(matches!(
        engine.reload(skipped.as_bytes(), None),
        ReloadOutcome::Applied { .. }
    ));
    // Only the gateway changes: the (dead) upstream is not checked again.
    let gateway_only = skipped
        .replace(", checkOnReload: false", "")
        .replace("advertisedHost: localhost", "advertisedHost: proxy.local");
    assert!(matches!(
        engine.reload(gateway_only.as_bytes(), None),
        ReloadOutcome::Applied { .. }
    ));
    assert!(engine.status().last_failed_version.is_none());
}

#[tokio::test]
async fn status_tells_added_modified_and_removed_clusters_apart() {
    let (a, b) = (ports(), ports());
    let one = config(
        a,
        "{ bootstrapServers: [127.0.0.1:9], checkOnReload: false }",
    );
    let engine = start(&one);
    let two = format!(
        "{one}  - name: b\n    upstream: {{ bootstrapServers: [127.0.0.1:9], checkOnReload: false }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {b}, brokerPorts: {{ start: {}, count: 1 }} }}\n",
        b + 1
    );
    assert!(matches!(
        engine.reload(two.as_bytes(), None),
        ReloadOutcome::Applied { .. }
    ));
    let attempt = engine.status().last_reload_attempt.expect("recorded");
    assert_eq!(attempt.clusters_added, ["b"]);
    assert!(attempt.clusters_modified.is_empty(), "{attempt:?}");
    let moved = two.replacen(
        "advertisedHost: localhost",
        "advertisedHost: proxy.local",
        1,
    );
    let only_b = moved.split("  - name: b").next().unwrap().to_owned();
    assert!(matches!(
        engine.reload(only_b.as_bytes(), None),
        ReloadOutcome::Applied { .. }
    ));
    let attempt = engine.status().last_reload_attempt.expect("recorded");
    assert_eq!(attempt.clusters_modified, ["a"]);
    assert_eq!(attempt.clusters_removed, ["b"]);
    assert!(attempt.clusters_added.is_empty());
}
