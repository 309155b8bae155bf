//! `startupPolicy: best-effort` means isolation: a cluster that cannot start
//! never blocks a reload of the others. Before the fix, a reload that only
//! changed `a` answered 500 (`virtual cluster b: bind …`) and `a` kept its
//! old configuration until `b` could start.

use sluice_admin_api::{ReloadApplied, ReloadStatus};
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;

use super::{NO_CHECK, cluster, proxy_config};

fn two_clusters(a_host: &str, port: u16) -> String {
    proxy_config(
        "startupPolicy: best-effort\n",
        &[
            cluster("a", port, NO_CHECK, "").replace("localhost", a_host),
            cluster("b", port + 2, NO_CHECK, ""),
        ],
    )
}

#[test]
fn a_cluster_that_cannot_start_never_blocks_a_reload_of_the_others() {
    let port = ports(4);
    // Another process holds b's bootstrap port: b starts failed.
    let holder = std::net::TcpListener::bind(("127.0.0.1", port + 2)).expect("hold b's port");
    let mut proxy = Proxy::start(&two_clusters("localhost", port));
    proxy.allow("Address already in use");
    proxy.allow("could not start");
    proxy.allow("prepare_failed");
    let failed: Vec<String> = proxy
        .status()
        .clusters_failed
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(failed, ["b"]);

    // A reload that changes only `a`: applied, `b` retried and still failed.
    let answer = proxy.reload(&two_clusters("a.proxy.local", port));
    assert_eq!(answer.status, 200, "{}", answer.body);
    let applied: ReloadApplied = answer.parse();
    let modified: Vec<&str> = applied
        .clusters_modified
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(modified, ["a"], "{}", answer.body);
    assert_eq!(applied.clusters_failed.len(), 1, "{}", answer.body);
    assert_eq!(applied.clusters_failed[0].name, "b");
    assert!(
        applied.clusters_failed[0]
            .error
            .contains("Address already in use"),
        "{}",
        answer.body
    );
    let status = proxy.status();
    assert_eq!(status.current_config_version, applied.config_version);
    assert_eq!(status.clusters_failed.len(), 1);
    assert_eq!(status.clusters_failed[0].name, "b");
    let attempt = status.last_reload_attempt.expect("recorded");
    assert_eq!(attempt.status, ReloadStatus::Applied);

    // Once the port is free, the next reload starts `b`.
    drop(holder);
    let answer = proxy.reload(&two_clusters("a2.proxy.local", port));
    assert_eq!(answer.status, 200, "{}", answer.body);
    let applied: ReloadApplied = answer.parse();
    assert!(applied.clusters_failed.is_empty(), "{}", answer.body);
    assert!(proxy.status().clusters_failed.is_empty());
    std::net::TcpStream::connect(("127.0.0.1", port + 2)).expect("b serves");
}
