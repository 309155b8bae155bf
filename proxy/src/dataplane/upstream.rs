//! Connecting to upstream brokers, and the proxy's own small Kafka client for
//! the one thing it asks by itself: which brokers exist (for a client that
//! connects straight to a broker port before any bootstrap).

use std::time::Duration;

use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
    RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::cluster::{ClusterRuntime, NodeAddr};
use super::sasl::{SaslError, authenticate};
use crate::config::sasl::SaslMechanism;
use crate::kafka::rewrite::Learned;
use crate::kafka::wire::{self, Checked};

/// How long connecting (TCP and TLS) to a broker may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the proxy's own metadata lookup may take.
pub(crate) const METADATA_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest response the proxy's own client accepts.
const MAX_OWN_RESPONSE: usize = 16 * 1024 * 1024;

/// A byte stream to a peer, plain or TLS.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A boxed stream.
pub(crate) type BoxIo = Box<dyn Io>;

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
            UpstreamError::AuthRequired { .. } | UpstreamError::Auth { .. }
        )
    }
}

/// Connects to one broker, with TLS when the cluster's upstream uses it.
pub(crate) async fn connect(
    cluster: &ClusterRuntime,
    host: &str,
    port: u16,
) -> Result<BoxIo, UpstreamError> {
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
    let result = dial(tls, host, port, CONNECT_TIMEOUT).await;
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

/// TCP, then TLS when given, to `host:port`, within `timeout`.
pub(crate) async fn dial(
    tls: Option<Tls<'_>>,
    host: &str,
    port: u16,
    timeout: Duration,
) -> Result<BoxIo, UpstreamError> {
    let addr = format!("{host}:{port}");
    let attempt = async {
        let tcp =
            TcpStream::connect((host, port))
                .await
                .map_err(|source| UpstreamError::Connect {
                    addr: addr.clone(),
                    source,
                })?;
        let _ = tcp.set_nodelay(true);
        let Some(tls) = tls else {
            return Ok(Box::new(tcp) as BoxIo);
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
        Ok(Box::new(stream) as BoxIo)
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(r) => r,
        Err(_) => Err(UpstreamError::Timeout(addr)),
    }
}

/// Connects to the first reachable bootstrap server.
pub(crate) async fn connect_bootstrap(
    cluster: &ClusterRuntime,
) -> Result<(BoxIo, String), UpstreamError> {
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
    let learned = tokio::time::timeout(METADATA_TIMEOUT, fetch_brokers(cluster))
        .await
        .map_err(|_| UpstreamError::Metadata("timed out".into()))??;
    cluster.learn(&learned);
    cluster.node(id).ok_or(UpstreamError::UnknownNode(id))
}

/// Asks a bootstrap server for the cluster's brokers.
async fn fetch_brokers(cluster: &ClusterRuntime) -> Result<Vec<Learned>, UpstreamError> {
    let (mut io, server) = connect_bootstrap(cluster).await?;
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

/// Whether the broker hung up on a request (what a SASL listener does to a
/// request sent before authentication).
pub(crate) fn hung_up(e: &str) -> bool {
    ["eof", "end of file", "reset", "broken pipe"]
        .iter()
        .any(|sign| e.contains(sign))
}

/// Where the proxy's own conversation with a broker went wrong.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Step {
    /// ApiVersions failed (I/O or an unreadable answer).
    #[error("ApiVersions: {0}")]
    ApiVersions(String),
    /// ApiVersions answered with an error code.
    #[error("ApiVersions answered error code {0}")]
    ApiVersionsError(i16),
    /// The broker offers no Metadata version the proxy can use.
    #[error("the broker offers no usable Metadata version")]
    NoMetadataVersion,
    /// Metadata failed (I/O or an unreadable answer).
    #[error("Metadata: {0}")]
    Metadata(String),
    /// Metadata answered with an error code.
    #[error("Metadata answered error code {0}")]
    MetadataError(i16),
}

/// ApiVersions, then the highest Metadata version both sides know (at least 1).
pub(crate) async fn metadata_version(io: &mut BoxIo) -> Result<i16, Step> {
    let versions: ApiVersionsResponse = call(
        io,
        ApiKey::ApiVersions,
        0,
        1,
        &ApiVersionsRequest::default(),
    )
    .await
    .map_err(Step::ApiVersions)?;
    if versions.error_code != 0 {
        return Err(Step::ApiVersionsError(versions.error_code));
    }
    let supported = ApiKey::Metadata.valid_versions();
    versions
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::Metadata as i16)
        .map(|k| k.max_version.min(supported.max))
        .filter(|v| *v >= 1)
        .ok_or(Step::NoMetadataVersion)
}

/// Metadata for no topic: the brokers only.
pub(crate) async fn metadata(io: &mut BoxIo, version: i16) -> Result<MetadataResponse, Step> {
    let mut request = MetadataRequest::default();
    // An empty topic list (v1+) asks for brokers only.
    request.topics = Some(Vec::new());
    let metadata: MetadataResponse = call(io, ApiKey::Metadata, version, 2, &request)
        .await
        .map_err(Step::Metadata)?;
    if metadata.error_code != 0 {
        return Err(Step::MetadataError(metadata.error_code));
    }
    Ok(metadata)
}

/// Sends one request and reads its response.
async fn call<Req: Encodable, Resp: Checked>(
    io: &mut BoxIo,
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    request: &Req,
) -> Result<Resp, String> {
    send(io, api, version, correlation_id, request).await?;
    let mut buf = receive(io, api, version, correlation_id).await?;
    wire::check(Resp::SCHEMA, version, &buf).map_err(|e| e.to_string())?;
    let response = Resp::decode(&mut buf, version).map_err(|e| e.to_string())?;
    if buf.has_remaining() {
        return Err("trailing bytes after the response".into());
    }
    Ok(response)
}

/// Sends one request of the proxy's own.
pub(super) async fn send<Req: Encodable>(
    io: &mut BoxIo,
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    request: &Req,
) -> Result<(), String> {
    let mut header = RequestHeader::default();
    header.request_api_key = api as i16;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(StrBytes::from_static_str("sluice-proxy"));
    let mut body = BytesMut::new();
    header
        .encode(&mut body, api.request_header_version(version))
        .map_err(|e| e.to_string())?;
    request
        .encode(&mut body, version)
        .map_err(|e| e.to_string())?;
    let mut frame = BytesMut::with_capacity(4 + body.len());
    frame.put_i32(i32::try_from(body.len()).map_err(|_| "request too large")?);
    frame.put_slice(&body);
    io.write_all(&frame).await.map_err(|e| e.to_string())?;
    io.flush().await.map_err(|e| e.to_string())
}

/// Reads the response to the request `correlation_id`: its body, after the
/// header.
pub(super) async fn receive(
    io: &mut BoxIo,
    api: ApiKey,
    version: i16,
    correlation_id: i32,
) -> Result<bytes::Bytes, String> {
    let len = io.read_i32().await.map_err(|e| e.to_string())?;
    let len = usize::try_from(len)
        .ok()
        .filter(|l| (4..=MAX_OWN_RESPONSE).contains(l))
        .ok_or_else(|| format!("bad response length {len}"))?;
    let mut buf = vec![0u8; len];
    io.read_exact(&mut buf).await.map_err(|e| e.to_string())?;
    let mut buf = bytes::Bytes::from(buf);
    let response_header = ResponseHeader::decode(&mut buf, api.response_header_version(version))
        .map_err(|e| e.to_string())?;
    if response_header.correlation_id != correlation_id {
        return Err("response does not match the request".into());
    }
    Ok(buf)
}
