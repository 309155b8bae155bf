//! A tenant's namespace in the data plane (`virtualClusters[].tenancy`):
//! the requests that name topics, groups or transactional ids are prefixed
//! before they go upstream (after the filters judged them by the names the
//! client gave): a Produce's names as its records stream
//! (`sluice_kafka::tenancy::produce`), the others held whole. Their
//! responses are held whole and unprefixed (before the address rewrite and
//! the policy see them); the cluster's own administration is refused.
//! Fetch requests and responses from v13 on name topics by id only, and
//! stream as ever.

use bytes::{Bytes, BytesMut};
use sluice_kafka::frame::{FrameError, RequestHeader};
use sluice_kafka::tenancy::produce::{self, Step};
use sluice_kafka::tenancy::{self, Tenant};
use tokio::io::{AsyncRead, AsyncWrite};

use super::block::charged;
use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{CHUNK, ConnError, FrameClock};
use super::splice::Splice;

/// Produce's API key.
const PRODUCE: i16 = 0;

/// Kafka's CLUSTER_AUTHORIZATION_FAILED: what a tenant's request for the
/// cluster's administration gets.
pub(super) const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;

/// The cluster's tenant, when it is one.
pub(super) fn of(cluster: &ClusterRuntime) -> Option<Tenant<'_>> {
    (cluster.config.tenancy.as_ref()).map(|t| Tenant::new(&t.prefix))
}

/// Whether a request to `header` on `cluster` is renamed (held whole).
pub(super) fn renames_request(cluster: &ClusterRuntime, header: &RequestHeader) -> bool {
    cluster.config.tenancy.is_some() && tenancy::renames_request(header.api_key, header.api_version)
}

/// Whether the response to `header` on `cluster` is renamed (held whole).
pub(super) fn renames_response(cluster: &ClusterRuntime, header: &RequestHeader) -> bool {
    cluster.config.tenancy.is_some()
        && tenancy::renames_response(header.api_key, header.api_version)
}

/// Whether a request of `api_key` to `cluster` is refused.
pub(super) fn refuses(cluster: &ClusterRuntime, api_key: i16) -> bool {
    cluster.config.tenancy.is_some() && tenancy::refuses(api_key)
}

/// The request `frame` with its names prefixed, charged to the budget.
pub(super) fn request(
    cluster: &ClusterRuntime,
    frame: Bytes,
    header: &RequestHeader,
) -> Result<Bytes, ConnError> {
    let Some(tenant) = of(cluster).filter(|_| renames_request(cluster, header)) else {
        return Ok(frame);
    };
    let out = tenant.request(&frame, header)?;
    drop(frame);
    let charge = cluster.budget().force(out.len());
    Ok(charged(out, charge))
}

/// The response `frame` with its names unprefixed (others' entries
/// dropped), when the cluster is a tenant and the API names any.
pub(super) fn response(
    cluster: &ClusterRuntime,
    frame: &Bytes,
    header: &RequestHeader,
) -> Result<Option<Bytes>, ConnError> {
    match of(cluster).filter(|_| renames_response(cluster, header)) {
        Some(tenant) => Ok(Some(tenant.response(frame, header)?)),
        None => Ok(None),
    }
}

/// Passes on the request of `total` bytes to `header` (a tenant's, whose
/// start is unread in `buf`) renamed: a Produce naming topics by name as
/// its records stream, any other held whole.
pub(super) async fn relay_request<R, W>(
    header: &RequestHeader,
    total: usize,
    cluster: &ClusterRuntime,
    buf: &mut FrameBuf,
    (rd, wr): (&mut R, &mut W),
    clock: &mut FrameClock,
) -> Result<(), ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let streams = header.api_key == PRODUCE && produce::streams_renamed(header.api_version);
    let prefix = cluster.config.tenancy.as_ref().map(|t| t.prefix.as_str());
    let Some(prefix) = prefix.filter(|_| streams) else {
        let frame = buf.hold(total, rd, wr, clock).await?;
        let frame = request(cluster, frame, header)?;
        return Ok(buf.write(wr, &frame).await?);
    };
    let bad = |reason: String| bad(header, reason);
    let (head, mut walk) = loop {
        let ready = buf.unread().len().min(total);
        let found = produce::head(&buf.unread()[..ready], header.api_version, prefix);
        if let Some(found) = found.map_err(bad)? {
            break found;
        }
        if ready >= total.min(CHUNK) {
            return Err(bad(format!("no head within {ready} bytes")));
        }
        if buf.read_more(rd, wr, clock).await? == 0 {
            return Err(ConnError::ClosedMidFrame);
        }
    };
    buf.set_frame_size(head.size);
    let mut pending = BytesMut::new();
    let mut left = total;
    for step in head.steps {
        left = take(step, left, &mut pending, buf, (rd, wr), clock)
            .await
            .map_err(|e| e.or(header))?;
    }
    loop {
        let ready = buf.unread().len().min(left);
        match walk.next(&buf.unread()[..ready]).map_err(bad)? {
            Some(Step::End) if left == 0 => {
                let end = take(Step::End, 0, &mut pending, buf, (rd, wr), clock).await;
                return end.map(drop).map_err(|e| e.or(header));
            }
            Some(Step::End) => return Err(bad(format!("{left} bytes after the request"))),
            Some(step) => {
                left = take(step, left, &mut pending, buf, (rd, wr), clock)
                    .await
                    .map_err(|e| e.or(header))?;
            }
            None if ready == left => return Err(bad("the request ends in a field".into())),
            None if ready >= CHUNK => return Err(bad(format!("a field of over {CHUNK} bytes"))),
            None => {
                if buf.read_more(rd, wr, clock).await? == 0 {
                    return Err(ConnError::ClosedMidFrame);
                }
            }
        }
    }
}

/// A step's failure: the connection's, or the request's (`Short`).
enum Failed {
    Conn(ConnError),
    Short(String),
}

impl Failed {
    fn or(self, header: &RequestHeader) -> ConnError {
        match self {
            Failed::Conn(e) => e,
            Failed::Short(reason) => bad(header, reason),
        }
    }
}

impl From<ConnError> for Failed {
    fn from(e: ConnError) -> Self {
        Failed::Conn(e)
    }
}

impl From<std::io::Error> for Failed {
    fn from(e: std::io::Error) -> Self {
        Failed::Conn(e.into())
    }
}

/// Takes one step of a renamed Produce; returns what is left of its frame.
async fn take<R, W>(
    step: Step,
    left: usize,
    pending: &mut BytesMut,
    buf: &mut FrameBuf,
    (rd, wr): (&mut R, &mut W),
    clock: &mut FrameClock,
) -> Result<usize, Failed>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let n = match &step {
        Step::Pass(n) | Step::Replace(n, _) | Step::Records(n) => *n,
        Step::End => 0,
    };
    if n > left {
        return Err(Failed::Short(format!("a field of {n} bytes, {left} left")));
    }
    // What comes between records (a few dozen bytes: heads, names, tagged
    // fields) is gathered and written at once before the next records.
    match step {
        Step::Pass(n) => pending.extend_from_slice(&buf.hold(n, rd, wr, clock).await?),
        Step::Replace(n, with) => {
            drop(buf.hold(n, rd, wr, clock).await?);
            pending.extend_from_slice(&with);
        }
        Step::Records(n) => {
            if !pending.is_empty() {
                buf.write(wr, &pending.split().freeze()).await?;
            }
            buf.stream(n, rd, wr, clock).await?;
        }
        Step::End => {
            if !pending.is_empty() {
                buf.write(wr, &pending.split().freeze()).await?;
            }
        }
    }
    Ok(left - n)
}

fn bad(header: &RequestHeader, reason: String) -> ConnError {
    ConnError::Frame(FrameError::BadRequest {
        api: sluice_kafka::api_name(header.api_key).to_owned(),
        version: header.api_version,
        reason,
    })
}
