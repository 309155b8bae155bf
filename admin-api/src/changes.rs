//! What a reload changes, per virtual cluster: what `sluice-config`'s
//! `diff` computes and the admin API, the CLI and the webhook report.

use serde::{Deserialize, Serialize};

/// The changes between the configuration in force and another one: the
/// `changes` of a valid [`ConfigValid`](crate::ConfigValid). Clusters are
/// listed in the order the new configuration names them (removed ones in the
/// order of the old).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    /// Clusters only in the new configuration: a reload starts them.
    pub added: Vec<String>,
    /// Clusters only in the configuration in force: a reload drains them.
    pub removed: Vec<String>,
    /// Clusters in both that differ: a reload starts a new generation and
    /// drains the old one.
    pub modified: Vec<ModifiedCluster>,
    /// Clusters in both whose only differences apply in place: TLS material
    /// and credentials (new contents or new paths of their files), `limits`
    /// and `filters`. A reload swaps them into the running generation: new
    /// handshakes use the material, open connections take the limits at
    /// their next frame and the filters at their next request, no
    /// connection is closed.
    #[serde(default)]
    pub rotated: Vec<ModifiedCluster>,
    /// Clusters in both that are identical: a reload does not touch them, not
    /// even their connections.
    pub unchanged: Vec<String>,
    /// Changes to proxy-wide settings (admin, drainTimeout, startupPolicy),
    /// which belong to no cluster.
    pub global: Vec<String>,
}

impl Changes {
    /// True when a reload would change nothing at all.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.modified.is_empty()
            && self.rotated.is_empty()
            && self.global.is_empty()
    }
}

/// A cluster present in both configurations that differs, and why: the
/// reasons tell an operator what a reload will restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModifiedCluster {
    /// The cluster's name.
    pub name: String,
    /// What differs, e.g. `gateway.advertisedHost changed from a to b`.
    pub reasons: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roundtrip::roundtrip;

    #[test]
    fn roundtrips() {
        let c: Changes = roundtrip(
            r#"{"added": ["new"], "removed": ["old"],
                "modified": [{"name": "a", "reasons": ["gateway.advertisedHost changed from localhost to proxy.local"]}],
                "rotated": [{"name": "r", "reasons": ["gateway.tls.certFile content changed"]}],
                "unchanged": ["steady"], "global": ["drainTimeout changed from 30s to 5s"]}"#,
        );
        assert_eq!(c.modified[0].name, "a");
        assert!(!c.is_empty());
        let only_unchanged = Changes {
            unchanged: vec!["steady".into()],
            ..Changes::default()
        };
        assert!(only_unchanged.is_empty());
    }
}
