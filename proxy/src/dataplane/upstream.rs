//! Connecting to upstream brokers, and asking them (through the proxy's own
//! small client, `client`) the one thing the proxy asks by itself: which
//! brokers exist (for a client that connects straight to a broker port
//! before any bootstrap).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::ServerName;
use sluice_kafka::rewrite::Learned;
use tokio::net::TcpStream;

use super::client::{Step, hung_up, metadata, metadata_version};
use super::cluster::{ClusterRuntime, NodeAddr};
use super::lookup::{Failure, Outcome, Via};
use super::own;
use super::sasl::{SaslError, authenticate};
use super::stream::Stream;
use crate::config::sasl::SaslMechanism;

/// How long connecting (TCP and TLS) to a broker may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the proxy's own metadata lookup may take.
pub(crate) const METADATA_TIMEOUT: Duration = Duration::from_secs(10);

/// Reaching the upstream cluster failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamError {
    /// TCP connect failed.
    #[error("connect to {addr}: {source}")]
    Connect {
        /// `host:port`.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The address is one of this proxy's own listeners (see `own`).
    #[error(
        "{0} is this proxy's own listener, so the proxy would connect to itself without end: a broker must advertise its own address (advertised.listeners), not the proxy's, and upstream.bootstrapServers and upstream.nodes must name the brokers"
    )]
    Itself(String),
    /// TCP or TLS took longer than [`CONNECT_TIMEOUT`].
    #[error("connect to {0}: timed out")]
    Timeout(String),
    /// The TLS handshake failed.
    #[error("tls handshake with {addr}: {source}")]
    Tls {
        /// `host:port`.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The name to verify the broker's certificate against is not valid.
    #[error("{0:?} is not a valid TLS server name")]
    ServerName(String),
    /// No bootstrap server could be reached.
    #[error("no bootstrap server reachable (last error: {0})")]
    NoBootstrap(Box<UpstreamError>),
    /// The proxy's own metadata request failed.
    #[error("metadata lookup: {0}")]
    Metadata(String),
    /// The broker lookup failed: this connection's, the one in flight it
    /// awaited, or one remembered (see `lookup`, which logs each cause once).
    #[error("broker lookup ({via}): {cause}")]
    Lookup {
        /// How this connection came by the failure.
        via: &'static str,
        /// Why the lookup failed.
        cause: Arc<str>,
        /// The upstream refused the proxy for want of authentication.
        auth: bool,
    },
    /// The node is not in the upstream cluster's metadata.
    #[error("node {0} is not in the upstream cluster's metadata")]
    UnknownNode(i32),
    /// The node is not in `upstream.nodes` (the proxy makes no lookup then).
    #[error("node {0} is not listed in upstream.nodes")]
    UnlistedNode(i32),
    /// The broker hung up at Metadata: it requires SASL, and the proxy has
    /// neither credentials nor a list of the brokers.
    #[error(
        "virtual cluster {cluster}: {server} closed the proxy's own connection at Metadata, so it requires SASL authentication; give the proxy credentials (upstream.sasl) or list the brokers (upstream.nodes), see docs/sasl.md"
    )]
    AuthRequired {
        /// The virtual cluster.
        cluster: String,
        /// The bootstrap server.
        server: String,
    },
    /// The proxy's own SASL authentication failed.
    #[error(
        "virtual cluster {cluster}: SASL {mechanism} authentication of the proxy's own connection to {server} failed: {source}"
    )]
    Auth {
        /// The virtual cluster.
        cluster: String,
        /// The bootstrap server.
        server: String,
        /// `upstream.sasl.mechanism`.
        mechanism: SaslMechanism,
        /// Why.
        #[source]
        source: SaslError,
    },
}

impl UpstreamError {
    /// Whether the upstream refused the proxy for want of authentication.
    pub(crate) fn is_auth(&self) -> bool {
        matches!(
            self,
            UpstreamError::AuthRequired { .. }
                | UpstreamError::Auth { .. }
                | UpstreamError::Lookup { auth: true, .. }
        )
    }
}

/// Connects to one broker, with TLS when the cluster's upstream uses it.
pub(crate) async fn connect(
    cluster: &ClusterRuntime,
    host: &str,
    port: u16,
) -> Result<Stream, UpstreamError> {
    let connector = cluster.connector();
    let tls = connector.as_ref().map(|connector| Tls {
        connector,
        server_name: cluster
            .config
            .upstream
            .tls
            .as_ref()
            .and_then(|t| t.server_name.as_deref()),
    });
    let result = dial(tls, host, port, CONNECT_TIMEOUT, To::Broker).await;
    if result.is_err() {
        cluster.metrics.upstream_connect_failures.inc();
    }
    result
}

/// TLS towards a broker: the connector built from the configured trust and
/// client certificate, and the name to verify (else the broker's host).
#[derive(Clone, Copy)]
pub(crate) struct Tls<'a> {
    pub(crate) connector: &'a tokio_rustls::TlsConnector,
    pub(crate) server_name: Option<&'a str>,
}

/// Whom a connection is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum To {
    /// A broker: never one of the proxy's own listeners (see `own`).
    Broker,
    /// The proxy's own listener, as a client would reach it (the front
    /// door's check of what clients are told).
    Own,
}

/// TCP, then TLS when given, to `host:port`, within `timeout`.
pub(crate) async fn dial(
    tls: Option<Tls<'_>>,
    host: &str,
    port: u16,
    timeout: Duration,
    to: To,
) -> Result<Stream, UpstreamError> {
    let addr = format!("{host}:{port}");
    let attempt = async {
        let connect_error = |source| UpstreamError::Connect {
            addr: addr.clone(),
            source,
        };
        // Never the proxy's own listener (see `own`): an address that is
        // one is refused; a name's own addresses are left out, and refused
        // when no other is left. An address is checked as it is, with no
        // allocation (see `own::is_own`).
        let own = |t: &SocketAddr| to == To::Broker && own::is_own(*t);
        let (one, named): ([SocketAddr; 1], Vec<SocketAddr>);
        let targets: &[SocketAddr] = match host.parse::<IpAddr>() {
            Ok(ip) => {
                one = [SocketAddr::new(ip, port)];
                if own(&one[0]) {
                    return Err(UpstreamError::Itself(addr.clone()));
                }
                &one
            }
            Err(_) => {
                let mut all: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
                    .await
                    .map_err(connect_error)?
                    .collect();
                let found = all.len();
                all.retain(|t| !own(t));
                if found > 0 && all.is_empty() {
                    return Err(UpstreamError::Itself(addr.clone()));
                }
                named = all;
                &named
            }
        };
        let tcp = TcpStream::connect(targets).await.map_err(connect_error)?;
        let _ = tcp.set_nodelay(true);
        let Some(tls) = tls else {
            return Ok(Stream::Plain(tcp));
        };
        let name = tls.server_name.unwrap_or(host).to_owned();
        let server_name =
            ServerName::try_from(name.clone()).map_err(|_| UpstreamError::ServerName(name))?;
        let stream = tls
            .connector
            .connect(server_name, tcp)
            .await
            .map_err(|source| UpstreamError::Tls {
                addr: addr.clone(),
                source,
            })?;
        Ok(Stream::Wrapped(Box::new(stream)))
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(r) => r,
        Err(_) => Err(UpstreamError::Timeout(addr)),
    }
}

/// Connects to the first reachable bootstrap server.
pub(crate) async fn connect_bootstrap(
    cluster: &ClusterRuntime,
) -> Result<(Stream, String), UpstreamError> {
    let mut last = None;
    for server in cluster.bootstrap_order() {
        let host = server.host.to_string();
        match connect(cluster, &host, server.port.get()).await {
            Ok(io) => return Ok((io, server.to_string())),
            Err(e) => {
                tracing::warn!(cluster = %cluster.name(), server = %server, error = %e, "bootstrap server unreachable");
                last = Some(e);
            }
        }
    }
    Err(UpstreamError::NoBootstrap(Box::new(last.unwrap_or(
        UpstreamError::Metadata("no bootstrap servers".into()),
    ))))
}

/// Where node `id` lives: learned from earlier responses, or asked of the
/// upstream cluster now.
pub(crate) async fn node_address(
    cluster: &ClusterRuntime,
    id: i32,
) -> Result<NodeAddr, UpstreamError> {
    if let Some(addr) = cluster.node(id) {
        return Ok(addr);
    }
    let listed = &cluster.config.upstream.nodes;
    if !listed.is_empty() {
        // The operator lists the brokers: no lookup.
        return listed
            .iter()
            .find(|n| n.id == id)
            .map(|n| NodeAddr {
                host: n.address.host.to_string(),
                port: n.address.port.get(),
            })
            .ok_or(UpstreamError::UnlistedNode(id));
    }
    let lookups = &cluster.lookups;
    let (via, outcome) = lookups
        .once(cluster.name(), &cluster.metrics, || look_up(cluster))
        .await;
    match outcome {
        Ok(()) => cluster.node(id).ok_or(UpstreamError::UnknownNode(id)),
        Err(Failure { cause, auth }) => Err(UpstreamError::Lookup {
            via: match via {
                Via::Own => "this connection's",
                Via::Shared => "shared with other connections",
                Via::Remembered => "remembered, not retried yet",
            },
            cause,
            auth,
        }),
    }
}

/// Asks the upstream cluster for its brokers and learns them.
async fn look_up(cluster: &ClusterRuntime) -> Outcome {
    let error = match tokio::time::timeout(METADATA_TIMEOUT, fetch_brokers(cluster)).await {
        Ok(Ok(learned)) => {
            cluster.learn(&learned);
            return Ok(());
        }
        Ok(Err(e)) => e,
        Err(_) => UpstreamError::Metadata("timed out".into()),
    };
    Err(Failure {
        cause: error.to_string().into(),
        auth: error.is_auth(),
    })
}

/// Asks a bootstrap server for the cluster's brokers.
async fn fetch_brokers(cluster: &ClusterRuntime) -> Result<Vec<Learned>, UpstreamError> {
    let (io, server) = connect_bootstrap(cluster).await?;
    let mut io = io.boxed();
    let fail = |e: Step| UpstreamError::Metadata(format!("{server}: {e}"));
    let version = metadata_version(&mut io).await.map_err(fail)?;
    let sasl = cluster.sasl();
    if let Some(sasl) = &sasl {
        authenticate(&mut io, sasl)
            .await
            .map_err(|source| UpstreamError::Auth {
                cluster: cluster.name().to_owned(),
                server: server.clone(),
                mechanism: sasl.mechanism,
                source,
            })?;
    }
    let metadata = match metadata(&mut io, version).await {
        Ok(m) => m,
        Err(Step::Metadata(e)) if sasl.is_none() && hung_up(&e) => {
            return Err(UpstreamError::AuthRequired {
                cluster: cluster.name().to_owned(),
                server,
            });
        }
        Err(e) => return Err(fail(e)),
    };
    Ok(metadata
        .brokers
        .into_iter()
        .map(|b| Learned {
            node_id: b.node_id.0,
            host: b.host.to_string(),
            port: b.port,
        })
        .collect())
}
