//! Proxy configurations for tests, with `{admin}` left for the harness to fill.

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

/// A configuration the watcher tests reload: one cluster with no broker
/// behind it (reloads need none); `n` makes each one distinct.
pub fn watched(admin: &str, port: u16, n: u32) -> String {
    format!(
        "admin: {{ listen: \"{admin}\" }}\ndrainTimeout: 1s\nvirtualClusters:\n  - name: watched\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n    limits: {{ maxConnections: {} }}\n",
        port + 1,
        1000 + n
    )
}

/// The configuration version of some text, as the proxy reports it.
pub fn version(text: &str) -> String {
    sluice_config::ConfigVersion::of(text.as_bytes()).to_string()
}
