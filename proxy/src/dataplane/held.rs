//! What every relay of a response shares: reading its head (checked to
//! answer the request in turn), and the rewrite of a response held whole
//! (broker addresses, ApiVersions' caps).

use bytes::Bytes;
use sluice_kafka::api_name;
use sluice_kafka::frame::{
    RESPONSE_HEAD, RequestHeader, response_correlation_id, response_frame_size,
};
use sluice_kafka::rewrite::{self, Frame, rewrite_response, rewrites};
use sluice_kafka::versions::cap_api_versions;
use tokio::io::{AsyncRead, AsyncWrite};

use super::block::charged;
use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{ConnError, FrameClock};
use super::splice::Splice;
use super::tenant;
use crate::signals::DecodedApi;

/// Kafka's ApiVersions key.
pub(super) const API_VERSIONS: i16 = 18;

/// Reads until the head of the response to `header` is in `buf`, checks
/// that it answers that request, and returns the frame's size.
pub(super) async fn response_head<R, W>(
    header: &RequestHeader,
    max: u32,
    buf: &mut FrameBuf,
    rd: &mut R,
    wr: &mut W,
    clock: &mut FrameClock,
) -> Result<usize, ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let total = loop {
        let unread = buf.unread();
        let total = response_frame_size(unread, max)?;
        if let Some(total) = total.filter(|_| unread.len() >= RESPONSE_HEAD) {
            break total;
        }
        if buf.read_more(rd, wr, clock).await? == 0 {
            return Err(ConnError::ClosedMidFrame);
        }
    };
    let got = response_correlation_id(buf.unread())?;
    if got != header.correlation_id {
        return Err(ConnError::Mismatch {
            expected: header.correlation_id,
            got,
        });
    }
    Ok(total)
}

/// Whether the response to this request is rewritten, so held whole: its
/// broker addresses, ApiVersions' caps, a tenant's names.
pub(super) fn held_whole(header: &RequestHeader, cluster: &ClusterRuntime) -> bool {
    header.api_key == API_VERSIONS
        || rewrites(header.api_key, header.api_version)
        || tenant::renames_response(cluster, header)
}

/// Whether a response held whole for its rewrite (the next `total` bytes
/// of `buf`) may pass as it came, written from the chunk: all of it is
/// there and it carries nothing to rewrite, as nearly every Produce and
/// Fetch response does not (checked as [`transform`] checks it). Not
/// holding it spares a copy, its charge and a walk of its header per
/// response, all before its first byte goes out.
pub(super) fn passes_as_it_came(
    header: &RequestHeader,
    total: usize,
    buf: &FrameBuf,
    cluster: &ClusterRuntime,
) -> Result<bool, ConnError> {
    if tenant::renames_response(cluster, header) {
        return Ok(false);
    }
    match buf.unread().get(..total) {
        Some(frame) => Ok(rewrite::passes_as_it_came(frame, header)?),
        None => Ok(false),
    }
}

/// Rewrites the responses that need it; the rest pass as they are.
pub(super) fn transform(
    frame: &Bytes,
    header: &RequestHeader,
    cluster: &ClusterRuntime,
) -> Result<Frame, ConnError> {
    if header.api_key == API_VERSIONS {
        return Ok(Frame::whole(cap_api_versions(
            frame,
            header.api_version,
            &|k| cluster.decodes(k),
        )?));
    }
    // A tenant's names first: what follows sees what the client will.
    let renamed = tenant::response(cluster, frame, header)?;
    let frame = renamed.as_ref().unwrap_or(frame);
    if !rewrites(header.api_key, header.api_version) {
        return Ok(Frame::whole(frame.clone()));
    }
    let rewritten = rewrite_response(frame, header, &cluster.advertised)?;
    // Metadata teaches the topic policy the names of topic ids.
    cluster.topic_ids.learn(&rewritten.topic_ids);
    if !rewritten.errors.is_empty()
        && let Some(api) = DecodedApi::of(header.api_key)
    {
        cluster.signals.response_errors(api, &rewritten.errors);
    }
    if !rewritten.changed {
        return Ok(rewritten.frame);
    }
    cluster.learn(&rewritten.learned);
    if !rewritten.unmapped.is_empty() {
        cluster.unmapped(&rewritten.unmapped);
    }
    cluster.metrics.rewrite(api_name(header.api_key));
    Ok(rewritten.frame)
}

/// Writes a held response, rewritten when it needs it. A frame that shares
/// the one it was made from (passed as it came, or spliced) keeps that
/// one's charge; a new one is charged in its place.
pub(super) async fn write_transformed<W>(
    frame: Bytes,
    header: &RequestHeader,
    cluster: &ClusterRuntime,
    buf: &mut FrameBuf,
    wr: &mut W,
) -> Result<(), ConnError>
where
    W: AsyncWrite + Splice + Unpin,
{
    let out = transform(&frame, header, cluster)?;
    if out.shares(&frame) {
        return buf.write_parts(wr, out.parts()).await.map_err(Into::into);
    }
    drop(frame);
    let out = out.to_bytes();
    let charge = cluster.budget().force(out.len());
    buf.write(wr, &charged(out, charge)).await?;
    Ok(())
}
