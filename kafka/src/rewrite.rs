//! Broker-address rewriting on typed responses.
//!
//! Every response that tells a client where a broker is gets decoded, its
//! endpoints replaced by the virtual cluster's advertised host and the
//! broker's proxy port (or, with SNI routing, the broker's own name and the
//! one SNI port), and encoded again. The upstream addresses seen on the
//! way are handed back so the proxy learns where each node lives, except
//! those of the KRaft quorum APIs (DescribeQuorum, Vote, ...): they are
//! controller listeners, and in combined mode a controller shares its node
//! id with a broker, so learning them would send that broker's clients to
//! the controller port. A node id
//! outside the configured port range is dropped from the response (a client
//! must never be sent to an address the proxy does not serve) and reported.
//! The output depends only on the input, so every replica writes the same bytes.

use bytes::Bytes;
use std::sync::LazyLock;

use kafka_protocol::messages::{
    ApiKey, FetchResponse, ProduceResponse, ResponseHeader, fetch_response, produce_response,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use sluice_config::apis;

use super::codec::Framer;
pub use super::codec::MAX_TRAILING_BYTES;
use super::frame::RequestHeader;
use super::splice;
pub use super::splice::Frame;
use super::wire::{self, Checked};
use sluice_config::model::BrokerPorts;
use sluice_config::types::HostPattern;

mod mapper;
mod tail;
mod whole;
use mapper::Mapper;
pub use tail::{PADDING_TAG, RewrittenTail, rewrite_tail};

/// A response could not be decoded or encoded; the connection is closed,
/// because forwarding it unrewritten could leak an upstream address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot rewrite {api} v{version} response: {reason}")]
pub struct RewriteError {
    /// The API's name.
    pub api: String,
    /// Its version.
    pub version: i16,
    /// What failed.
    pub reason: String,
}

/// Where clients of one virtual cluster are sent.
#[derive(Debug, Clone)]
pub struct Advertised(Target);

#[derive(Debug, Clone)]
enum Target {
    /// One host, a port per node.
    Ports { host: StrBytes, ports: BrokerPorts },
    /// A host name per node, one port.
    Sni { pattern: HostPattern, port: u16 },
}

impl Advertised {
    /// Clients are told `host` and each node's port from `ports`.
    pub fn new(host: &str, ports: BrokerPorts) -> Self {
        Advertised(Target::Ports {
            host: StrBytes::from_string(host.to_owned()),
            ports,
        })
    }

    /// Clients are told each node's name from `pattern`, at `port` (SNI
    /// routing: every node behind the one port).
    pub fn sni(pattern: HostPattern, port: u16) -> Self {
        Advertised(Target::Sni { pattern, port })
    }

    /// The longest host name clients may be told, in bytes.
    fn longest_host(&self) -> usize {
        match &self.0 {
            Target::Ports { host, .. } => host.len(),
            Target::Sni { pattern, .. } => pattern.host_for(i32::MAX).map_or(0, |h| h.len()),
        }
    }

    /// The host and port clients are told for a node; `None` when the
    /// proxy does not serve it.
    fn endpoint(&self, node_id: i32) -> Option<(StrBytes, u16)> {
        match &self.0 {
            Target::Ports { host, ports } => Some((host.clone(), ports.port_for(node_id)?)),
            Target::Sni { pattern, port } => {
                Some((StrBytes::from_string(pattern.host_for(node_id)?), *port))
            }
        }
    }
}

/// An upstream node's address, as the upstream cluster announced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Learned {
    /// Kafka node id.
    pub node_id: i32,
    /// Host as announced.
    pub host: String,
    /// Port as announced.
    pub port: i32,
}

/// A rewritten response frame and what was seen while rewriting it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    /// The new frame, length prefix included.
    pub frame: Frame,
    /// False when the response carried no endpoints: `frame` is the
    /// original.
    pub changed: bool,
    /// Upstream addresses announced in the response.
    pub learned: Vec<Learned>,
    /// Node ids outside the port range, dropped from the response.
    pub unmapped: Vec<i32>,
    /// Topic ids and names a Metadata response (v10 on) carries, for the
    /// topic policy's id map (`policy::TopicIds`).
    pub topic_ids: Vec<(uuid::Uuid, String)>,
    /// The distinct error codes other than 0 in the response as rewritten
    /// (Metadata: the response's, its topics' and partitions';
    /// FindCoordinator: each coordinator's; DescribeCluster: the
    /// response's), in the order first seen. Empty for Produce and Fetch:
    /// their bodies are checked, not decoded.
    pub errors: Vec<i16>,
}

/// Whether responses of this API at this version carry broker endpoints
/// (the `apis` table of `sluice-config`: Produce from v10 and Fetch from v16,
/// KIP-951).
pub fn rewrites(api_key: i16, api_version: i16) -> bool {
    apis::by_key(api_key).is_some_and(|a| a.rewritten_at(api_version))
}

/// APIs whose responses may be rewritten; their versions are capped in
/// ApiVersions to what the proxy can decode. Read from the `apis` table.
pub static REWRITTEN_APIS: LazyLock<Vec<ApiKey>> = LazyLock::new(|| {
    apis::rewritten()
        .filter_map(|a| ApiKey::try_from(a.key).ok())
        .collect()
});

macro_rules! node_endpoints {
    ($mapper:expr, $list:expr) => {
        $list.retain_mut(|e| $mapper.endpoint(e.node_id.0, &mut e.host, &mut e.port))
    };
}

/// Rewrites a response frame (length prefix included) to a request with
/// `header`. Call only when [`rewrites`] is true for it.
pub fn rewrite_response(
    frame: &Bytes,
    request: &RequestHeader,
    to: &Advertised,
) -> Result<Rewritten, RewriteError> {
    let version = request.api_version;
    let api = api_of(request)?;
    let fail = |reason: String| failed(api, version, reason);
    let m = Mapper {
        to,
        learn: !quorum_api(api),
        learned: Vec::new(),
        unmapped: Vec::new(),
        errors: Vec::new(),
        topic_ids: Vec::new(),
    };
    // Produce and Fetch responses carry node endpoints only after a leader
    // moved: the rest are checked and passed on as they came, not decoded
    // and encoded again (kafka-protocol encodes them back to the same bytes).
    // With endpoints, only their tagged fields are rewritten (`splice`).
    // Their header is checked, not decoded (nothing of it changes).
    if let Some(schema) = endpoints_tagged(api) {
        let body = response_body(frame, api, version).map_err(fail)?;
        return rewrite_tagged(api, schema, frame, body, version, m).map_err(fail);
    }
    let header_version = api.response_header_version(version);
    response_body(frame, api, version).map_err(fail)?;
    let mut m = m;
    let mut buf = frame.slice(4..);
    let header =
        ResponseHeader::decode(&mut buf, header_version).map_err(|e| fail(e.to_string()))?;
    let out = Framer {
        header: &header,
        header_version,
    };
    let frame = whole::rewrite(api, &mut buf, version, &mut m, &out).map_err(fail)?;
    Ok(Rewritten {
        frame: Frame::whole(frame),
        changed: true,
        learned: m.learned,
        unmapped: m.unmapped,
        errors: m.errors,
        topic_ids: m.topic_ids,
    })
}

/// Whether a response frame (length prefix included) to `request`, which
/// [`rewrites`], would pass [`rewrite_response`] as it came, checked as that
/// checks it: a Produce or Fetch response that carries no node endpoints
/// (nearly every one). Read in place, without a copy of the frame: when
/// `false`, call [`rewrite_response`].
pub fn passes_as_it_came(frame: &[u8], request: &RequestHeader) -> Result<bool, RewriteError> {
    let version = request.api_version;
    let api = api_of(request)?;
    let Some(schema) = endpoints_tagged(api) else {
        return Ok(false);
    };
    let fail = |reason: String| failed(api, version, reason);
    let body = response_body(frame, api, version).map_err(fail)?;
    let layout = tagged_layout(schema, version, body).map_err(fail)?;
    Ok(!layout.present)
}

/// The API a request is of.
fn api_of(request: &RequestHeader) -> Result<ApiKey, RewriteError> {
    ApiKey::try_from(request.api_key).map_err(|()| RewriteError {
        api: format!("api key {}", request.api_key),
        version: request.api_version,
        reason: "unknown API".to_owned(),
    })
}

fn failed(api: ApiKey, version: i16, reason: String) -> RewriteError {
    RewriteError {
        api: format!("{api:?}"),
        version,
        reason,
    }
}

/// The body of a response frame to `api` at `version`, past its length
/// prefix and its header (checked).
fn response_body(frame: &[u8], api: ApiKey, version: i16) -> Result<&[u8], String> {
    let header_version = api.response_header_version(version);
    let head = frame.get(4..).unwrap_or_default();
    // A correlation id, and in version 1 no tagged fields (as nearly always):
    // known without a walk.
    let plain = match (header_version, head.get(4)) {
        (0, _) if head.len() >= 4 => Some(4),
        (1, Some(0)) => Some(5),
        _ => None,
    };
    if let Some(size) = plain {
        return Ok(&head[size..]);
    }
    let size =
        wire::check(&wire::RESPONSE_HEADER, header_version, head).map_err(|e| e.to_string())?;
    Ok(&head[size..])
}

/// Where the parts of a Produce or Fetch response's body lie (checked,
/// with at most [`MAX_TRAILING_BYTES`] after it).
fn tagged_layout(
    schema: &'static wire::Schema,
    version: i16,
    buf: &[u8],
) -> Result<wire::Layout, String> {
    let layout =
        wire::check_for_tag(schema, version, buf, NODE_ENDPOINTS_TAG).map_err(|e| e.to_string())?;
    let trailing = buf.len() - layout.size;
    if trailing > MAX_TRAILING_BYTES {
        return Err(format!("{trailing} bytes left over after the message"));
    }
    Ok(layout)
}

/// Rewrites a Produce or Fetch response (`buf`: its body) whose endpoints
/// are a tagged field: only that field, when it is there and not empty.
fn rewrite_tagged(
    api: ApiKey,
    schema: &'static wire::Schema,
    frame: &Bytes,
    buf: &[u8],
    version: i16,
    mut m: Mapper<'_>,
) -> Result<Rewritten, String> {
    let layout = tagged_layout(schema, version, buf)?;
    if !layout.present {
        return Ok(unchanged(frame));
    }
    let body_at = frame.len() - buf.len();
    let spliced = if api == ApiKey::Produce {
        splice::endpoints(
            frame,
            body_at,
            layout,
            version,
            |list: &mut Vec<produce_response::NodeEndpoint>| node_endpoints!(m, list),
        )
    } else {
        splice::endpoints(
            frame,
            body_at,
            layout,
            version,
            |list: &mut Vec<fetch_response::NodeEndpoint>| node_endpoints!(m, list),
        )
    };
    // An empty list (some brokers always send the tag) leaves nothing
    // to rewrite: the frame passes as it came.
    Ok(match spliced? {
        None => unchanged(frame),
        Some(frame) => Rewritten {
            frame,
            changed: true,
            learned: m.learned,
            unmapped: m.unmapped,
            errors: Vec::new(),
            topic_ids: Vec::new(),
        },
    })
}

/// The KRaft quorum APIs: the endpoints they carry are controllers'.
fn quorum_api(api: ApiKey) -> bool {
    matches!(
        api,
        ApiKey::DescribeQuorum
            | ApiKey::Vote
            | ApiKey::BeginQuorumEpoch
            | ApiKey::EndQuorumEpoch
            | ApiKey::FetchSnapshot
    )
}

/// A response passed on as it came.
fn unchanged(frame: &Bytes) -> Rewritten {
    Rewritten {
        frame: Frame::whole(frame.clone()),
        changed: false,
        learned: Vec::new(),
        unmapped: Vec::new(),
        errors: Vec::new(),
        topic_ids: Vec::new(),
    }
}

/// The tag of `NodeEndpoints` in the responses that carry it as a tagged
/// field (KIP-951).
const NODE_ENDPOINTS_TAG: u32 = 0;

/// The layout of the high-volume responses whose endpoints are an optional
/// tagged field.
fn endpoints_tagged(api: ApiKey) -> Option<&'static wire::Schema> {
    match api {
        ApiKey::Produce => Some(<ProduceResponse as Checked>::SCHEMA),
        ApiKey::Fetch => Some(<FetchResponse as Checked>::SCHEMA),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_header_without_tags_is_read_as_the_walk_reads_it() {
        // Produce v9 has header v1, v8 header v0.
        let id = 7i32.to_be_bytes();
        let frame = |rest: &[u8]| [&[0, 0, 0, 0][..], &id, rest].concat();
        for (version, rest, body) in [
            (8, &[1, 2][..], Some(&[1, 2][..])),
            (9, &[0, 1, 2][..], Some(&[1, 2][..])),
            // One tag of two bytes: the walk's way.
            (9, &[1, 5, 2, 9, 9, 1][..], Some(&[1][..])),
            (9, &[][..], None),
            (9, &[1, 5, 9][..], None),
        ] {
            let frame = frame(rest);
            let got = response_body(&frame, ApiKey::Produce, version);
            assert_eq!(got.ok(), body, "v{version} {rest:?}");
        }
        assert!(response_body(&[0, 0, 0, 0, 1], ApiKey::Produce, 8).is_err());
    }
}
