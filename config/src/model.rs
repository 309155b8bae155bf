//! The typed configuration: what a valid `proxy.yaml` means.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use self::sasl::UpstreamSasl;
use super::files::FileRef;
use super::tls::{GatewayTls, Loaded, UpstreamTls};
use super::types::{ClusterName, Host, HostPattern, HostPort, Port, SniHost};
use crate::filter::FilterSpec;

pub mod analysis;
pub(crate) mod sasl;

pub use analysis::{AnalysisSettings, FrontDoorSettings, SignalSettings};

/// Default admin listener: loopback only, so no token is needed.
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:9190";
/// Default time old connections may live after a reload or at shutdown.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cap on concurrent client connections per virtual cluster.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10_000;
/// Default time a started frame may take to arrive whole.
pub const DEFAULT_FRAME_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cap on one Kafka frame, in bytes (100 MiB, Kafka's `socket.request.max.bytes`).
pub const DEFAULT_MAX_FRAME_BYTES: u32 = 100 * 1024 * 1024;
/// Default cap on the bytes the whole proxy holds for frames in flight (256
/// MiB: half the 512 MiB the manifests give the pod, which leaves room for
/// the one frame allowed past it and for the process itself).
pub const DEFAULT_MAX_BUFFERED_BYTES: u64 = 256 * 1024 * 1024;
/// Smallest `limits.maxBufferedBytes` (1 MiB): below it a few clients would
/// take turns at every frame.
pub const MIN_MAX_BUFFERED_BYTES: u64 = 1024 * 1024;
/// Largest `limits.maxBufferedBytes` (1 TiB).
pub const MAX_MAX_BUFFERED_BYTES: u64 = 1 << 40;

/// A whole proxy configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyConfig {
    /// The admin HTTP API.
    pub admin: Admin,
    /// How long old connections may live after a reload or at shutdown.
    pub drain_timeout: Duration,
    /// What startup does when a virtual cluster cannot start.
    pub startup_policy: StartupPolicy,
    /// Proxy-wide resource limits.
    pub limits: ProxyLimits,
    /// The virtual clusters, in the order written.
    pub virtual_clusters: Vec<VirtualCluster>,
}

/// Proxy-wide resource limits (`limits` at the top level; each virtual
/// cluster has its own [`Limits`] too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyLimits {
    /// Bytes the data plane may hold for frames, across every connection of
    /// every cluster: read buffers of frames passing through, frames held
    /// whole to be rewritten or answered, the proxy's own answers waiting
    /// their turn. At the limit, connections stop reading until memory is
    /// released. Applied when the process starts.
    pub max_buffered_bytes: u64,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits {
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
        }
    }
}

impl ProxyConfig {
    /// The virtual cluster with this name.
    pub fn cluster(&self, name: &str) -> Option<&VirtualCluster> {
        self.virtual_clusters
            .iter()
            .find(|c| c.name.as_str() == name)
    }
}

/// The admin HTTP API's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Admin {
    /// Address the admin API listens on.
    pub listen: SocketAddr,
    /// File holding the bearer token that mutating calls must present; required
    /// when `listen` is not a loopback address.
    pub token_file: Option<FileRef>,
    /// The token read from `token_file`, trimmed.
    pub token: Option<Loaded<String>>,
    /// When set, the admin API speaks HTTPS only, with this certificate.
    pub tls: Option<crate::tls::AdminTls>,
}

/// What startup does when a virtual cluster cannot start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartupPolicy {
    /// Exit non-zero, naming every cluster that failed.
    FailFast,
    /// Serve the clusters that started; report the rest as failed.
    BestEffort,
}

impl StartupPolicy {
    /// The name used in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            StartupPolicy::FailFast => "fail-fast",
            StartupPolicy::BestEffort => "best-effort",
        }
    }
}

/// One virtual cluster: a set of listeners in front of one upstream cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct VirtualCluster {
    /// Unique name.
    pub name: ClusterName,
    /// The Kafka cluster behind it.
    pub upstream: Upstream,
    /// What clients connect to.
    pub gateway: Gateway,
    /// Per-cluster resource limits.
    pub limits: Limits,
    /// Filters applied to every request, in order.
    pub filters: Vec<FilterSpec>,
    /// How a change to this cluster is judged by what its clients see
    /// (never a reason to restart it).
    pub analysis: AnalysisSettings,
    /// Where each connection's principal comes from; `None`: clients are
    /// not identified (every rule keys on what they say, their client id).
    pub authentication: Option<crate::identity::Authentication>,
    /// The namespace its clients' names get on a shared upstream; `None`:
    /// clients see the upstream's names as they are.
    pub tenancy: Option<Tenancy>,
}

/// A virtual cluster as a tenant of a shared upstream: every topic, group
/// and transactional id its clients name is, upstream, `prefix` and that
/// name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenancy {
    /// Put before every name on the way up, taken off on the way down.
    pub prefix: String,
}

/// The upstream Kafka cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    /// Where the proxy bootstraps; at least one.
    pub bootstrap_servers: Vec<HostPort>,
    /// TLS towards the brokers, when they require it.
    pub tls: Option<UpstreamTls>,
    /// How long a reload's upstream check may take (TCP, TLS, ApiVersions,
    /// Metadata) before it fails the reload.
    pub check_timeout: Duration,
    /// Whether a reload that adds this cluster or changes its upstream
    /// checks the upstream first. Off for upstreams that are down on purpose;
    /// startup never checks (a proxy must start while Kafka is down).
    pub check_on_reload: bool,
    /// The proxy's own credentials, for the connections it makes by itself
    /// (its broker lookup, the upstream check) to a cluster that requires
    /// SASL. Clients authenticate themselves, through the proxy.
    pub sasl: Option<UpstreamSasl>,
    /// The brokers, when the operator lists them: the proxy then never asks
    /// the upstream which brokers exist. Empty when not given.
    pub nodes: Vec<StaticNode>,
}

/// A broker listed in `upstream.nodes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticNode {
    /// Its node id.
    pub id: i32,
    /// Where it listens, as the upstream cluster advertises it.
    pub address: HostPort,
}

/// Default `upstream.checkTimeout`.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// The client-facing side of a virtual cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Gateway {
    /// Address every listener of this cluster binds.
    pub listen_host: IpAddr,
    /// How clients reach the bootstrap and each broker.
    pub routing: Routing,
    /// TLS for clients, when set (always set with [`Routing::Sni`]).
    pub tls: Option<GatewayTls>,
}

/// How clients reach a virtual cluster's bootstrap and brokers.
#[derive(Debug, Clone, PartialEq)]
pub enum Routing {
    /// A port for the bootstrap and one per broker.
    Ports(PortRouting),
    /// One port shared with other clusters; the TLS server name picks the
    /// cluster and the broker.
    Sni(SniRouting),
}

/// Port per broker (`advertisedHost`, `bootstrapPort`, `brokerPorts`).
#[derive(Debug, Clone, PartialEq)]
pub struct PortRouting {
    /// Host name clients are told in broker addresses.
    pub advertised_host: Host,
    /// Port clients bootstrap on.
    pub bootstrap_port: Port,
    /// One port per upstream broker.
    pub broker_ports: BrokerPorts,
}

/// SNI routing (`gateway.sni`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SniRouting {
    /// The port, shared by every SNI cluster on the same `listenHost`.
    pub port: Port,
    /// The server name of the bootstrap.
    pub bootstrap_host: SniHost,
    /// The server names of the brokers, by node id; clients are told these.
    pub broker_host_pattern: HostPattern,
}

impl Gateway {
    /// The port-per-broker settings, when the cluster uses them.
    pub fn ports(&self) -> Option<&PortRouting> {
        match &self.routing {
            Routing::Ports(p) => Some(p),
            Routing::Sni(_) => None,
        }
    }

    /// The SNI settings, when the cluster routes by server name.
    pub fn sni(&self) -> Option<&SniRouting> {
        match &self.routing {
            Routing::Sni(s) => Some(s),
            Routing::Ports(_) => None,
        }
    }
}

/// Maps upstream node ids to proxy ports: node N listens on
/// `start + (N - first_node_id)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerPorts {
    /// Port of the first node.
    pub start: Port,
    /// How many consecutive ports (and node ids) there are.
    pub count: u16,
    /// Node id served on `start`.
    pub first_node_id: i32,
}

impl BrokerPorts {
    /// Last port of the range.
    pub fn last_port(&self) -> u16 {
        // Validation guarantees the range fits below 65536.
        self.start.get() + (self.count - 1)
    }

    /// The proxy port for an upstream node id, if it is inside the range.
    pub fn port_for(&self, node_id: i32) -> Option<u16> {
        let offset = i64::from(node_id) - i64::from(self.first_node_id);
        if (0..i64::from(self.count)).contains(&offset) {
            u16::try_from(i64::from(self.start.get()) + offset).ok()
        } else {
            None
        }
    }

    /// The upstream node id served on a proxy port, if the port is in the range.
    pub fn node_for(&self, port: u16) -> Option<i32> {
        let offset = port.checked_sub(self.start.get())?;
        if offset >= self.count {
            return None;
        }
        // Validation keeps first_node_id + count - 1 within i32.
        self.first_node_id.checked_add(i32::from(offset))
    }

    /// Every (port, node id) pair of the range, in order.
    pub fn pairs(&self) -> impl Iterator<Item = (u16, i32)> + '_ {
        (0..self.count).filter_map(|i| {
            let port = self.start.get().checked_add(i)?;
            Some((port, self.node_for(port)?))
        })
    }
}

/// Per-cluster resource limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Concurrent client connections; more are closed at once.
    pub max_connections: u32,
    /// Largest Kafka frame accepted, either way; larger ones close the connection.
    pub max_frame_bytes: u32,
    /// Once a client has started sending a frame, the whole frame must arrive
    /// within this time, so a stalled or hostile client cannot hold a
    /// connection half-open forever.
    pub frame_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            frame_timeout: DEFAULT_FRAME_TIMEOUT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_ports_map_both_ways() {
        let ports = BrokerPorts {
            start: Port::new(19093).unwrap(),
            count: 3,
            first_node_id: 1,
        };
        assert_eq!(ports.port_for(1), Some(19093));
        assert_eq!(ports.port_for(3), Some(19095));
        assert_eq!(ports.port_for(0), None);
        assert_eq!(ports.port_for(4), None);
        assert_eq!(ports.port_for(i32::MIN), None);
        assert_eq!(ports.node_for(19094), Some(2));
        assert_eq!(ports.node_for(19096), None);
        assert_eq!(ports.node_for(80), None);
        assert_eq!(ports.last_port(), 19095);
    }
}
