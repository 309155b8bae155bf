//! The proxy's own small Kafka client: one request on a broker connection
//! and its answer, checked against the wire layout before it is decoded.

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
    ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable};
use sluice_kafka::encode;
use sluice_kafka::wire::Checked;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest response the proxy's own client accepts.
const MAX_OWN_RESPONSE: usize = 16 * 1024 * 1024;

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

/// ApiVersions (v0: every broker answers it).
pub(crate) async fn api_versions(
    io: &mut (impl AsyncRead + AsyncWrite + Unpin),
) -> Result<ApiVersionsResponse, Step> {
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
    Ok(versions)
}

/// ApiVersions, then the highest Metadata version both sides know (at least 1).
pub(crate) async fn metadata_version(
    io: &mut (impl AsyncRead + AsyncWrite + Unpin),
) -> Result<i16, Step> {
    let versions = api_versions(io).await?;
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
pub(crate) async fn metadata(
    io: &mut (impl AsyncRead + AsyncWrite + Unpin),
    version: i16,
) -> Result<MetadataResponse, Step> {
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
    io: &mut (impl AsyncRead + AsyncWrite + Unpin),
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    request: &Req,
) -> Result<Resp, String> {
    send(io, api, version, correlation_id, request).await?;
    let mut buf = receive(io, api, version, correlation_id).await?;
    // The data plane's decoder and its bounded tolerance for bytes a peer
    // adds after the message (librdkafka's mock cluster adds one).
    sluice_kafka::decode(&mut buf, version)
}

/// Sends one request of the proxy's own.
pub(crate) async fn send<Req: Encodable>(
    io: &mut (impl AsyncRead + AsyncWrite + Unpin),
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    request: &Req,
) -> Result<(), String> {
    let frame = encode::request(api, version, correlation_id, "sluice-proxy", request)
        .map_err(|e| e.to_string())?;
    io.write_all(&frame).await.map_err(|e| e.to_string())?;
    io.flush().await.map_err(|e| e.to_string())
}

/// Reads the response to the request `correlation_id`: its body, after the
/// header.
pub(crate) async fn receive(
    io: &mut (impl AsyncRead + AsyncWrite + Unpin),
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
