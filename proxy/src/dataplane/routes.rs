//! Where a listener's connections go: a port of its own leads to one
//! generation in one role; a shared SNI port to a table of server names
//! (built whole at each commit, see [`super::sni`]). Below both the
//! listener and the SNI port, which each read them.

use std::collections::HashMap;
use std::sync::Arc;

use super::cluster::ClusterRuntime;
use super::connection::Role;
use crate::config::types::HostPattern;

/// Where a port's connections go.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    /// The generation serving the port.
    pub cluster: Arc<ClusterRuntime>,
    /// Bootstrap or which broker.
    pub role: Role,
}

/// What a listener's connections lead to.
#[derive(Debug, Clone)]
pub(crate) enum Routes {
    /// Every connection goes to one generation, in one role.
    Port(Route),
    /// The TLS server name picks the generation and role; `None` until the
    /// commit that starts the listener has built the table (connections
    /// wait for it).
    Sni(Option<Arc<SniTable>>),
}

/// Server names to generations, for one SNI listener.
#[derive(Debug, Default)]
pub(crate) struct SniTable {
    bootstrap: HashMap<String, Arc<ClusterRuntime>>,
    brokers: Vec<(HostPattern, Arc<ClusterRuntime>)>,
}

impl SniTable {
    /// The table of these generations (those routed by SNI; validation
    /// made every name on one port lead to one of them).
    pub(crate) fn new<'a>(generations: impl IntoIterator<Item = &'a Arc<ClusterRuntime>>) -> Self {
        let mut table = SniTable::default();
        for runtime in generations {
            let Some(sni) = runtime.config.gateway.sni() else {
                continue;
            };
            table
                .bootstrap
                .insert(sni.bootstrap_host.as_str().to_owned(), Arc::clone(runtime));
            table
                .brokers
                .push((sni.broker_host_pattern.clone(), Arc::clone(runtime)));
        }
        table
    }

    /// Where a server name leads (names are compared in lowercase, as DNS
    /// compares them).
    pub(crate) fn route(&self, server_name: &str) -> Option<Route> {
        let name = server_name.to_ascii_lowercase();
        if let Some(cluster) = self.bootstrap.get(&name) {
            return Some(Route {
                cluster: Arc::clone(cluster),
                role: Role::Bootstrap,
            });
        }
        self.brokers.iter().find_map(|(pattern, cluster)| {
            let node = pattern.node_for(&name)?;
            Some(Route {
                cluster: Arc::clone(cluster),
                role: Role::Broker(node),
            })
        })
    }

    /// How many clusters it routes to.
    pub(crate) fn len(&self) -> usize {
        self.brokers.len()
    }
}
