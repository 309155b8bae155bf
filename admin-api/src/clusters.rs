//! `GET /admin/clusters`: every virtual cluster's current generation and the
//! older generations still draining.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The answer (200).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Clusters {
    /// One entry per configured cluster, by name.
    pub clusters: Vec<ClusterStatus>,
}

/// A cluster's current generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// The cluster's name, as configured.
    pub name: String,
    /// Lifecycle state of its current generation: whether it serves.
    pub state: ClusterState,
    /// When it entered that state (RFC 3339).
    pub since: String,
    /// Why it is in that state, when it failed: what to fix.
    pub reason: Option<String>,
    /// Its generation number; a reload that modifies the cluster raises it,
    /// one that leaves it alone does not.
    pub generation: u64,
    /// Client connections open on it.
    pub active_connections: usize,
    /// Addresses it listens on (`host:port`); with SNI routing, the one
    /// port it shares with the other SNI clusters on that address.
    pub listeners: Vec<String>,
    /// The server names clients reach it by, when it is routed by SNI
    /// (`gateway.sni`); absent for port per broker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sni: Option<SniNames>,
    /// Older generations still draining: connections a reload moved off the
    /// cluster's ports that have not ended yet.
    pub draining: Vec<DrainingStatus>,
}

/// The TLS server names of an SNI-routed cluster, as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SniNames {
    /// The shared port's address (`host:port`).
    pub listener: String,
    /// The bootstrap's name.
    pub bootstrap_host: String,
    /// The brokers' names, `$(nodeId)` standing for each node id.
    pub broker_host_pattern: String,
}

/// A generation that is draining.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainingStatus {
    /// Its generation number.
    pub generation: u64,
    /// When it started draining (RFC 3339): it is stopped at `drainTimeout`
    /// after that.
    pub since: String,
    /// Connections still open.
    pub active_connections: usize,
}

/// Where a generation is in its life (the proxy's lifecycle state machine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClusterState {
    /// Being prepared; serves nothing yet.
    Initializing,
    /// New connections on its ports come to it. Says nothing about upstream
    /// health.
    Accepting,
    /// Takes no new connections; open ones end at their next request
    /// boundary or at `drainTimeout`.
    Draining,
    /// Every connection is gone. Terminal.
    Stopped,
    /// Preparing failed (see `reason`); a reload retries it as a new
    /// generation.
    Failed,
}

impl ClusterState {
    /// Every state, for code that must name each one.
    pub const ALL: [ClusterState; 5] = [
        ClusterState::Initializing,
        ClusterState::Accepting,
        ClusterState::Draining,
        ClusterState::Stopped,
        ClusterState::Failed,
    ];

    /// The state's name, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterState::Initializing => "initializing",
            ClusterState::Accepting => "accepting",
            ClusterState::Draining => "draining",
            ClusterState::Stopped => "stopped",
            ClusterState::Failed => "failed",
        }
    }
}

impl fmt::Display for ClusterState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roundtrip::roundtrip;

    #[test]
    fn roundtrips() {
        let c: Clusters = roundtrip(
            r#"{"clusters": [
                {"name": "a", "state": "accepting", "since": "2025-01-02T03:04:05.678Z", "reason": null,
                 "generation": 3, "activeConnections": 2, "listeners": ["127.0.0.1:9092", "127.0.0.1:9093"],
                 "draining": [{"generation": 2, "since": "2025-01-02T03:04:05.600Z", "activeConnections": 1}]},
                {"name": "b", "state": "failed", "since": "2025-01-02T03:04:05.678Z",
                 "reason": "bind 127.0.0.1:9094: address in use", "generation": 4,
                 "activeConnections": 0, "listeners": [], "draining": []},
                {"name": "c", "state": "accepting", "since": "2025-01-02T03:04:05.678Z", "reason": null,
                 "generation": 5, "activeConnections": 0, "listeners": ["0.0.0.0:9092"],
                 "sni": {"listener": "0.0.0.0:9092", "bootstrapHost": "bootstrap.c.example.com",
                         "brokerHostPattern": "broker-$(nodeId).c.example.com"},
                 "draining": []}]}"#,
        );
        let sni = c.clusters[2].sni.as_ref().expect("sni names");
        assert_eq!(sni.bootstrap_host, "bootstrap.c.example.com");
        assert!(c.clusters[0].sni.is_none());
        assert_eq!(c.clusters[1].state, ClusterState::Failed);
        assert_eq!(c.clusters[0].state.to_string(), "accepting");
        for s in ["initializing", "accepting", "draining", "stopped", "failed"] {
            let state: ClusterState = roundtrip(&format!("\"{s}\""));
            assert_eq!(state.as_str(), s);
        }
    }
}
