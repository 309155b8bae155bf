//! Proxy configurations in front of tansu, with `{admin}` left for the
//! harness to fill.

use crate::peers::TANSU_NODE_ID;

/// A virtual cluster in front of one tansu broker: bootstrap on `port`, its
/// one broker port on `port + 1`; `extra` (indented YAML) is appended.
pub fn tansu_cluster(name: &str, upstream: &str, port: u16, extra: &str) -> String {
    format!(
        "  - name: {name}\n    upstream: {{ bootstrapServers: [\"{upstream}\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {port}\n      brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }}\n{extra}",
        port + 1
    )
}

/// A whole configuration: the admin placeholder, a drain timeout, the clusters.
pub fn with_drain(drain: &str, clusters: &[String]) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\ndrainTimeout: {drain}\nvirtualClusters:\n{}",
        clusters.concat()
    )
}

/// A cluster's YAML (as the helpers write it, bootstrap servers `["upstream"]`)
/// with its one bootstrap server listed `times` times: the same broker, but
/// a changed `upstream.bootstrapServers`, so a reload gives the cluster a new
/// generation and drains the old one (a change of `limits` or `filters`
/// would apply in place).
pub fn listed_times(cluster: &str, upstream: &str, times: usize) -> String {
    let list = vec![format!("\"{upstream}\""); times].join(", ");
    cluster.replacen(&format!("[\"{upstream}\"]"), &format!("[{list}]"), 1)
}

/// A cluster's `filters` (at its indentation): a topic policy keyed on
/// principals, `alice` may write `orders` and `bob` `audit`, both may
/// describe every topic, nothing else.
pub const BY_PRINCIPAL: &str = "    filters:
      - type: topic-policy
        config:
          default: deny
          rules:
            - { allow: [produce], topics: [orders], principals: [alice] }
            - { allow: [produce], topics: [audit], principals: [bob] }
            - { allow: [describe], topics: [\"*\"] }
";

/// Asserts what [`BY_PRINCIPAL`] gives: alice's `sasl_client.py` report
/// (`alice`) wrote `orders` and not `audit`, bob's (`bob`) the reverse.
pub fn assert_rights_by_principal(
    alice: &serde_json::Value,
    bob: &serde_json::Value,
    context: &str,
) {
    let wrote = |seen: &serde_json::Value, topic: &str| seen["delivered"][topic]["ok"] == true;
    assert!(wrote(alice, "orders"), "alice, {context}: {alice}");
    assert!(!wrote(alice, "audit"), "alice, {context}: {alice}");
    assert!(wrote(bob, "audit"), "bob, {context}: {bob}");
    assert!(!wrote(bob, "orders"), "bob, {context}: {bob}");
}

/// A proxy configuration (admin API included) of one cluster, `name`, on
/// ports `base` and `base + 1`, in front of the tansu at `upstream`, its
/// broker listed in `upstream.nodes` (so the proxy makes no lookup of its
/// own), with `gateway` (more gateway keys, at their indentation) and
/// `rest` (the cluster's other keys: `authentication`, `filters`).
pub fn pinned(name: &str, base: u16, upstream: &str, gateway: &str, rest: &str) -> String {
    let node = crate::peers::TANSU_NODE_ID;
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: {name}\n    upstream:\n      bootstrapServers: [\"{upstream}\"]\n      checkOnReload: false\n      nodes: [{{ id: {node}, address: \"{upstream}\" }}]\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: 1, firstNodeId: {node} }}\n{gateway}{rest}",
        base + 1
    )
}
