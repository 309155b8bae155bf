//! Responses rewritten whole: decoded, every endpoint replaced (or dropped
//! when the proxy does not serve its node), and encoded again into one
//! frame.

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, BeginQuorumEpochResponse, DescribeClusterResponse, DescribeQuorumResponse,
    EndQuorumEpochResponse, FetchSnapshotResponse, FindCoordinatorResponse, MetadataResponse,
    ShareAcknowledgeResponse, ShareFetchResponse, VoteResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::super::codec::{Framer, decode};
use super::mapper::Mapper;

/// Kafka's COORDINATOR_NOT_AVAILABLE: the client looks the coordinator up again.
const COORDINATOR_NOT_AVAILABLE: i16 = 15;

/// Rewrites the body in `buf` of an `api` response at `version` into the
/// frame `out` makes (the bytes left after the body follow it).
pub(super) fn rewrite(
    api: ApiKey,
    buf: &mut Bytes,
    version: i16,
    m: &mut Mapper<'_>,
    out: &Framer<'_>,
) -> Result<Bytes, String> {
    // The responses whose endpoints are a `node_endpoints` list.
    macro_rules! node_endpoints {
        ($response:ty) => {{
            let mut r = decode::<$response>(buf, version)?;
            r.node_endpoints
                .retain_mut(|e| m.endpoint(e.node_id.0, &mut e.host, &mut e.port));
            out.frame(&r, version, buf)
        }};
    }
    match api {
        ApiKey::Metadata => {
            let mut r = decode::<MetadataResponse>(buf, version)?;
            r.brokers
                .retain_mut(|b| m.endpoint(b.node_id.0, &mut b.host, &mut b.port));
            metadata_errors(&r, m);
            out.frame(&r, version, buf)
        }
        ApiKey::FindCoordinator => {
            let mut r = decode::<FindCoordinatorResponse>(buf, version)?;
            coordinators(&mut r, version, m);
            out.frame(&r, version, buf)
        }
        ApiKey::DescribeCluster => {
            let mut r = decode::<DescribeClusterResponse>(buf, version)?;
            r.brokers
                .retain_mut(|b| m.endpoint(b.broker_id.0, &mut b.host, &mut b.port));
            m.error(r.error_code);
            out.frame(&r, version, buf)
        }
        ApiKey::DescribeQuorum => {
            let mut r = decode::<DescribeQuorumResponse>(buf, version)?;
            for node in &mut r.nodes {
                let id = node.node_id.0;
                node.listeners
                    .retain_mut(|l| m.endpoint(id, &mut l.host, &mut l.port));
            }
            out.frame(&r, version, buf)
        }
        ApiKey::ShareFetch => node_endpoints!(ShareFetchResponse),
        ApiKey::ShareAcknowledge => node_endpoints!(ShareAcknowledgeResponse),
        ApiKey::Vote => node_endpoints!(VoteResponse),
        ApiKey::BeginQuorumEpoch => node_endpoints!(BeginQuorumEpochResponse),
        ApiKey::EndQuorumEpoch => node_endpoints!(EndQuorumEpochResponse),
        ApiKey::FetchSnapshot => node_endpoints!(FetchSnapshotResponse),
        other => Err(format!("{other:?} responses carry no broker endpoints")),
    }
}

/// The coordinators a FindCoordinator response names (one before v4, a
/// list from v4): one the proxy does not serve becomes
/// COORDINATOR_NOT_AVAILABLE, so the client asks again rather than connect
/// where the proxy cannot follow.
fn coordinators(r: &mut FindCoordinatorResponse, version: i16, m: &mut Mapper<'_>) {
    coordinators_rewritten(r, version, m);
    if version < 4 {
        m.error(r.error_code);
    } else {
        for c in &r.coordinators {
            m.error(c.error_code);
        }
    }
}

/// The errors a Metadata response carries: its own (v13 on), its topics'
/// and their partitions'.
/// Also records each topic's id and name, when it has both.
fn metadata_errors(r: &MetadataResponse, m: &mut Mapper<'_>) {
    m.error(r.error_code);
    for t in &r.topics {
        m.error(t.error_code);
        if let Some(name) = t.name.as_ref().filter(|_| !t.topic_id.is_nil()) {
            m.topic_ids.push((t.topic_id, name.to_string()));
        }
        for p in &t.partitions {
            m.error(p.error_code);
        }
    }
}

fn coordinators_rewritten(r: &mut FindCoordinatorResponse, version: i16, m: &mut Mapper<'_>) {
    if version < 4 {
        if r.error_code == 0 && !m.endpoint(r.node_id.0, &mut r.host, &mut r.port) {
            r.error_code = COORDINATOR_NOT_AVAILABLE;
            r.error_message = Some(StrBytes::from_static_str(
                "coordinator is outside the proxy's broker port range",
            ));
            r.node_id.0 = -1;
            r.host = StrBytes::default();
            r.port = -1;
        }
    } else {
        for c in &mut r.coordinators {
            if c.error_code == 0 && !m.endpoint(c.node_id.0, &mut c.host, &mut c.port) {
                c.error_code = COORDINATOR_NOT_AVAILABLE;
                c.error_message = Some(StrBytes::from_static_str(
                    "coordinator is outside the proxy's broker port range",
                ));
                c.node_id.0 = -1;
                c.host = StrBytes::default();
                c.port = -1;
            }
        }
    }
}
