//! The configuration every pod of a fleet gets: one cluster, `orders`, in
//! front of the broker, with the gateway's settings a rollout test changes
//! (the advertised host, the first node id, a limit, the analysis).

use sluice_testkit::netns::HUB;

use super::{ADMIN, BROKER};

/// What a test changes in the `orders` cluster; [`Default`] is what
/// [`config`] writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// `gateway.advertisedHost`.
    pub advertised_host: String,
    /// `gateway.brokerPorts.firstNodeId` (one broker port: only this node
    /// id has a port; the broker's is 111).
    pub first_node_id: i32,
    /// `limits.maxConnections`, when set.
    pub max_connections: Option<u32>,
    /// The cluster's `analysis` block as YAML flow text
    /// (`{ enabled: false }`), when set.
    pub analysis: Option<String>,
}

impl Default for Cluster {
    fn default() -> Cluster {
        Cluster {
            advertised_host: "127.0.0.1".to_owned(),
            first_node_id: 111,
            max_connections: None,
            // A short window: the tests' rollouts wait for it on the canary.
            analysis: Some("{ window: 3s }".to_owned()),
        }
    }
}

/// The configuration every pod gets: one cluster in front of `upstream`;
/// `marker` makes each version distinct.
pub fn config(upstream: &str, marker: u32) -> String {
    config_with(upstream, marker, &Cluster::default())
}

/// Like [`config`], with the cluster's settings as given.
pub fn config_with(upstream: &str, marker: u32, c: &Cluster) -> String {
    let mut text = format!(
        "# version {marker}\nadmin: {{ listen: 0.0.0.0:{ADMIN}, tokenFile: token }}\ndrainTimeout: 2s\nvirtualClusters:\n  - name: orders\n    upstream: {{ bootstrapServers: [\"{upstream}\"], checkTimeout: 3s }}\n    gateway: {{ listenHost: 0.0.0.0, advertisedHost: {}, bootstrapPort: 19092, brokerPorts: {{ start: 19093, count: 1, firstNodeId: {} }} }}\n",
        c.advertised_host, c.first_node_id
    );
    if let Some(n) = c.max_connections {
        text.push_str(&format!("    limits: {{ maxConnections: {n} }}\n"));
    }
    if let Some(analysis) = &c.analysis {
        text.push_str(&format!("    analysis: {analysis}\n"));
    }
    text
}

/// Like [`config`], the cluster serving TLS with the pair in each pod's
/// Secret-style volume `secret/` beside the configuration (the same bytes on
/// every pod: the paths are relative).
pub fn config_tls(upstream: &str, marker: u32) -> String {
    config(upstream, marker).replace(
        "firstNodeId: 111 }",
        "firstNodeId: 111 }, tls: { certFile: secret/tls.crt, keyFile: secret/tls.key }",
    )
}

/// The broker's address.
pub fn broker() -> String {
    format!("{HUB}:{BROKER}")
}
