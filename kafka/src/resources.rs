//! Consumer groups and transactional ids named by requests, and the
//! proxy's answer refusing a request for one of them (Kafka's ACLs on the
//! GROUP and TRANSACTIONAL_ID resources). The APIs are those of
//! `sluice-config`'s `policy::API_RESOURCES` (a test checks each is here).
//!
//! A request naming a refused group or transactional id is refused whole:
//! nothing goes upstream, and each entry of the answer (each group, each
//! partition, each coordinator key) carries the protocol's own error,
//! GROUP_AUTHORIZATION_FAILED or TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
//! which clients report and do not retry. The connection stays open.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::RequestHeader as KHeader;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, StrBytes};
use sluice_config::policy::ResourceKind;

use super::codec::{decode, encode, with_header};
use super::frame::{FrameError, RequestHeader};

mod answers;

pub(crate) use answers::delete_groups as refuse_delete_groups;

/// Kafka's GROUP_AUTHORIZATION_FAILED: what a broker answers for a group
/// its ACLs refuse.
pub const GROUP_AUTHORIZATION_FAILED: i16 = 30;

/// Kafka's TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;

/// The message of every refusal, where the response has a place for one.
pub(crate) const MESSAGE: &str = "denied by the proxy's topic-policy";

/// [`MESSAGE`], where a response has a place for it.
pub(crate) fn message() -> Option<StrBytes> {
    Some(StrBytes::from_static_str(MESSAGE))
}

/// The groups and transactional ids of one request, in its order.
pub type Named = Vec<(ResourceKind, String)>;

/// Reads the names of a request's body (at a version).
type Names = fn(&mut Bytes, i16) -> Result<Named, String>;

/// Encodes the refusal of a request's body (at a version) with an error.
type Refuse = fn(&mut Bytes, i16, i16) -> Result<BytesMut, String>;

/// The error a refusal for a resource of `kind` carries.
pub fn refusal_code(kind: ResourceKind) -> i16 {
    match kind {
        ResourceKind::Group => GROUP_AUTHORIZATION_FAILED,
        ResourceKind::TransactionalId => TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
}

/// Whether the proxy reads the groups and transactional ids of `api_key`.
pub fn reads(api_key: i16) -> bool {
    ApiKey::try_from(api_key).ok().and_then(entry).is_some()
}

/// The groups and transactional ids `frame` (a request, prefix included,
/// to `header`) names; none for an API that names none.
pub fn named(frame: &Bytes, header: &RequestHeader) -> Result<Named, FrameError> {
    let Some((api, mut body)) = body(frame, header)? else {
        return Ok(Vec::new());
    };
    let Some((names, _)) = entry(api) else {
        return Ok(Vec::new());
    };
    names(&mut body, header.api_version).map_err(|e| bad(api, header.api_version, e))
}

/// The proxy's answer refusing `frame` (a request, prefix included, to
/// `header`) for a resource of `kind`: each of its entries with
/// [`refusal_code`].
pub fn refuse_named(
    frame: &Bytes,
    header: &RequestHeader,
    kind: ResourceKind,
) -> Result<Bytes, FrameError> {
    let version = header.api_version;
    let found = body(frame, header)?.and_then(|(api, body)| Some((api, body, entry(api)?)));
    let Some((api, mut body, (_, refuse))) = found else {
        return Err(FrameError::BadRequest {
            api: format!("api key {}", header.api_key),
            version,
            reason: "names no group or transactional id".to_owned(),
        });
    };
    let fail = |e| bad(api, version, e);
    let answer = refuse(&mut body, version, refusal_code(kind)).map_err(fail)?;
    let mut out = ResponseHeader::default();
    out.correlation_id = header.correlation_id;
    with_header(&out, api.response_header_version(version), &answer).map_err(fail)
}

/// The API of `frame` and its body, after the header; `None` for an API
/// kafka-protocol does not know.
fn body(frame: &Bytes, header: &RequestHeader) -> Result<Option<(ApiKey, Bytes)>, FrameError> {
    let Ok(api) = ApiKey::try_from(header.api_key) else {
        return Ok(None);
    };
    let mut buf = frame.slice(4..);
    KHeader::decode(&mut buf, api.request_header_version(header.api_version))
        .map_err(|e| bad(api, header.api_version, e.to_string()))?;
    Ok(Some((api, buf)))
}

fn bad(api: ApiKey, version: i16, reason: String) -> FrameError {
    FrameError::BadRequest {
        api: format!("{api:?}"),
        version,
        reason,
    }
}

/// A group named in a request.
fn g(id: &GroupId) -> (ResourceKind, String) {
    (ResourceKind::Group, id.0.to_string())
}

/// A transactional id named in a request.
fn t(id: &TransactionalId) -> (ResourceKind, String) {
    (ResourceKind::TransactionalId, id.0.to_string())
}

/// A request naming one group (or transactional id, or both) whose
/// response has one error, at its top: its names, and its refusal.
macro_rules! one {
    ($req:ty => $resp:ty, |$r:ident| $names:expr) => {
        (
            (|buf, version| {
                let $r: $req = decode(buf, version)?;
                Ok($names)
            }) as Names,
            (|buf, version, code| {
                let _: $req = decode(buf, version)?;
                let mut out = <$resp>::default();
                out.error_code = code;
                encode(&out, version)
            }) as Refuse,
        )
    };
}

/// How each API's names are read and its refusal made.
fn entry(api: ApiKey) -> Option<(Names, Refuse)> {
    use ApiKey as K;
    Some(match api {
        K::JoinGroup => one!(JoinGroupRequest => JoinGroupResponse, |r| vec![g(&r.group_id)]),
        K::Heartbeat => one!(HeartbeatRequest => HeartbeatResponse, |r| vec![g(&r.group_id)]),
        K::SyncGroup => one!(SyncGroupRequest => SyncGroupResponse, |r| vec![g(&r.group_id)]),
        K::LeaveGroup => one!(LeaveGroupRequest => LeaveGroupResponse, |r| vec![g(&r.group_id)]),
        K::InitProducerId => one!(InitProducerIdRequest => InitProducerIdResponse, |r| {
            r.transactional_id.iter().map(t).collect()
        }),
        K::AddOffsetsToTxn => one!(AddOffsetsToTxnRequest => AddOffsetsToTxnResponse, |r| {
            vec![t(&r.transactional_id), g(&r.group_id)]
        }),
        K::EndTxn => one!(EndTxnRequest => EndTxnResponse, |r| vec![t(&r.transactional_id)]),
        K::ConsumerGroupHeartbeat => {
            one!(ConsumerGroupHeartbeatRequest => ConsumerGroupHeartbeatResponse, |r| {
                vec![g(&r.group_id)]
            })
        }
        K::ShareGroupHeartbeat => {
            one!(ShareGroupHeartbeatRequest => ShareGroupHeartbeatResponse, |r| {
                vec![g(&r.group_id)]
            })
        }
        K::ShareFetch => one!(ShareFetchRequest => ShareFetchResponse, |r| {
            r.group_id.iter().map(g).collect()
        }),
        K::ShareAcknowledge => one!(ShareAcknowledgeRequest => ShareAcknowledgeResponse, |r| {
            r.group_id.iter().map(g).collect()
        }),
        K::AlterShareGroupOffsets => {
            one!(AlterShareGroupOffsetsRequest => AlterShareGroupOffsetsResponse, |r| {
                vec![g(&r.group_id)]
            })
        }
        K::DeleteShareGroupOffsets => {
            one!(DeleteShareGroupOffsetsRequest => DeleteShareGroupOffsetsResponse, |r| {
                vec![g(&r.group_id)]
            })
        }
        _ => return answers::entry(api),
    })
}

#[cfg(test)]
mod tests;
