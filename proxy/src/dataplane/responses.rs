//! Upstream to client: responses matched to the in-flight slots, in order.
//! A response whose request the proxy rewrites the answer of (broker
//! addresses, ApiVersions) is held whole, rewritten, written and freed;
//! every other one streams through the connection's chunk as it arrives.
//! The proxy's own answers are written in their turn. Each frame has
//! `limits.frameTimeout` of waiting for the client to take it (`patience`).

use std::collections::VecDeque;
use std::net::IpAddr;

use bytes::Bytes;
use sluice_kafka::api_name;
use sluice_kafka::frame::{
    RESPONSE_HEAD, RequestHeader, response_correlation_id, response_frame_size,
};
use sluice_kafka::rewrite::{Frame, rewrite_response, rewrites};
use sluice_kafka::versions::cap_api_versions;
use tokio::io::{AsyncRead, AsyncWrite};

use super::block::charged;
use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{Answer, ConnError, FrameClock, Slot};
use super::inflight::Receiver;
use super::patience::Patient;
use super::splice::Splice;
use super::throttle;
use crate::signals::DecodedApi;

/// Kafka's ApiVersions key.
const API_VERSIONS: i16 = 18;
/// Kafka's Metadata key.
const METADATA: i16 = 3;

/// Upstream to client, until the upstream closes, or the client is done
/// and every slot is answered. `told`: the client's address on a bootstrap
/// connection, until its first Metadata answer (the client signals).
pub(super) async fn forward_responses<R, W>(
    mut rd: R,
    wr: W,
    mut rx: Receiver<Slot>,
    cluster: &ClusterRuntime,
    mut told: Option<IpAddr>,
) -> Result<(), ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let mut wr = Patient::new(wr, cluster.limits().frame_timeout);
    let mut buf = FrameBuf::new(
        cluster.budget(),
        cluster.metrics.bytes_to_client.clone(),
        cluster.metrics.spliced_to_client.clone(),
    );
    // Bounded by the slots' permits.
    let mut queue: VecDeque<Slot> = VecDeque::new();
    let mut open = true;
    loop {
        while let Some(slot) = rx.try_recv() {
            queue.push_back(slot);
        }
        let Some(front) = queue.front() else {
            // Slots are queued before their requests are sent, so bytes
            // that find none answer no request.
            if !buf.unread().is_empty() {
                return Err(ConnError::Unsolicited);
            }
            buf.flush(&mut wr).await?;
            buf.release_if_empty();
            if !open {
                return Ok(());
            }
            tokio::select! {
                slot = rx.recv() => match slot {
                    Some(slot) => queue.push_back(slot),
                    None => open = false,
                },
                n = buf.read_idle(&mut rd) => {
                    let n = n?;
                    if n == 0 {
                        return Ok(());
                    }
                    Box::pin(buf.adopt(n)).await;
                }
            }
            continue;
        };
        match &front.answer {
            // Boxed: what a frame on its way needs is held only while it
            // is, so that an idle connection's task stays small.
            Answer::Local(answer) => Box::pin(buf.write(&mut wr, answer)).await?,
            Answer::Upstream(header) => {
                let header = *header;
                // Read per frame: a reload may change them in place.
                let max = cluster.limits().max_frame_bytes;
                // The quota's hook: a metered request's response is
                // counted (Fetch) or given its throttle time (Produce).
                let relayed = match front.metered.as_deref() {
                    Some(m) => {
                        let (b, r, w) = (&mut buf, &mut rd, &mut wr);
                        Box::pin(throttle::relay(m, &header, max, b, r, w, cluster)).await
                    }
                    None => {
                        Box::pin(relay(&header, max, &mut buf, &mut rd, &mut wr, cluster)).await
                    }
                };
                match relayed {
                    Err(ConnError::ClosedMidFrame) => return Err(closed(&queue)),
                    other => other?,
                }
                if header.api_key == METADATA
                    && let Some(ip) = told.take()
                {
                    cluster.signals.told_brokers(ip);
                }
            }
        }
        // Passed on: the slot's permit lets the client send another request.
        queue.pop_front();
        wr.next_frame(cluster.limits().frame_timeout);
    }
}

/// A response cut off mid-frame: the upstream closed with the requests
/// still queued unanswered.
fn closed(queue: &VecDeque<Slot>) -> ConnError {
    let waiting = queue
        .iter()
        .filter(|s| matches!(s.answer, Answer::Upstream(_)))
        .count();
    ConnError::UpstreamClosed(waiting)
}

/// Passes on the response to `header`: streamed, or held and rewritten.
pub(super) async fn relay<R, W>(
    header: &RequestHeader,
    max: u32,
    buf: &mut FrameBuf,
    rd: &mut R,
    wr: &mut W,
    cluster: &ClusterRuntime,
) -> Result<(), ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let mut clock = FrameClock::unlimited();
    let total = loop {
        let unread = buf.unread();
        let total = response_frame_size(unread, max)?;
        if let Some(total) = total.filter(|_| unread.len() >= RESPONSE_HEAD) {
            break total;
        }
        if buf.read_more(rd, wr, &mut clock).await? == 0 {
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
    if !held_whole(header) {
        return buf.stream(total, rd, wr, &mut clock).await;
    }
    let frame = buf.hold(total, rd, wr, &mut clock).await?;
    let out = transform(&frame, header, cluster)?;
    // A frame that shares the one it was made from (passed as it came, or
    // spliced) keeps that one's charge; a new one is charged in its place.
    if out.shares(&frame) {
        return buf.write_parts(wr, out.parts()).await.map_err(Into::into);
    }
    drop(frame);
    let out = out.to_bytes();
    let charge = cluster.budget().force(out.len());
    buf.write(wr, &charged(out, charge)).await?;
    Ok(())
}

/// Whether the response to this request is rewritten, so held whole.
pub(super) fn held_whole(header: &RequestHeader) -> bool {
    header.api_key == API_VERSIONS || rewrites(header.api_key, header.api_version)
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
    let rewritten = rewrite_response(frame, header, &cluster.advertised)?;
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
