//! Upstream to client: responses matched to the in-flight slots, in order.
//! A response whose request the proxy rewrites the answer of (broker
//! addresses, ApiVersions) is held whole, rewritten, written and freed,
//! except a Fetch response larger than a chunk, whose records stream while
//! its endpoints are rewritten (`fetch`); every other one streams through
//! the connection's chunk as it arrives.
//! The proxy's own answers are written in their turn. Each frame has
//! `limits.frameTimeout` of waiting for the client to take it (`patience`).

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use sluice_kafka::frame::RequestHeader;
use sluice_kafka::streamed::streams;
use tokio::io::{AsyncRead, AsyncWrite};

use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{Answer, ConnError, FrameClock, Slot};
use super::fetch;
use super::held::{held_whole, passes_as_it_came, response_head, write_transformed};
use super::inflight::Receiver;
use super::inspect::Inspection;
use super::merged::relay_merged;
use super::metered::Metered;
use super::patience::Patient;
use super::requests::learn_session;
use super::splice::Splice;
use super::throttle;

/// Kafka's Metadata key.
const METADATA: i16 = 3;

/// Upstream to client, until the upstream closes, or the client is done
/// and every slot is answered. `told`: the client's address on a bootstrap
/// connection, until its first Metadata answer (the client signals).
pub(super) async fn forward_responses<R, W>(
    mut rd: R,
    wr: W,
    mut rx: Receiver<Slot>,
    (cluster, mut told): (&ClusterRuntime, Option<IpAddr>),
    inspected: Option<(&Inspection, &OnceLock<Arc<str>>)>,
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
                biased;
                slot = rx.recv() => match slot {
                    Some(slot) => queue.push_back(slot),
                    None => open = false,
                },
                n = buf.read_idle(&mut rd) => {
                    let n = n?;
                    if n == 0 {
                        return Ok(());
                    }
                    if buf.adopts() {
                        Box::pin(buf.adopt(n)).await;
                    }
                }
            }
            continue;
        };
        // Boxed: what a frame on its way needs is held only while it is,
        // so that an idle connection's task stays small.
        let answered = match inspected.filter(|_| front.inspects) {
            Some(inspection) => {
                Box::pin(relay_inspected(
                    front, inspection, &mut buf, &mut rd, &mut wr, cluster,
                ))
                .await
            }
            None => Box::pin(answer(front, &mut buf, &mut rd, &mut wr, cluster)).await,
        };
        let api = match answered {
            Err(ConnError::ClosedMidFrame) => return Err(closed(&queue)),
            other => other?,
        };
        if api == Some(METADATA)
            && let Some(ip) = told.take()
        {
            cluster.signals.told_brokers(ip);
        }
        // Passed on: the slot's permit lets the client send another request.
        queue.pop_front();
        wr.next_frame(cluster.limits().frame_timeout);
    }
}

/// Passes on the answer of the slot in front: the proxy's own, or the
/// upstream's response (merged with a split request's denied part, given
/// a quota's throttle time, or as it comes). Returns the upstream
/// response's API key.
async fn answer<R, W>(
    front: &Slot,
    buf: &mut FrameBuf,
    rd: &mut R,
    wr: &mut W,
    cluster: &ClusterRuntime,
) -> Result<Option<i16>, ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    // Read per frame: a reload may change it in place.
    let max = cluster.limits().max_frame_bytes;
    match &front.answer {
        Answer::Local(answer) => {
            buf.write(wr, answer).await?;
            Ok(None)
        }
        // A request a topic policy split: merged (`merged`), and metered
        // like any other.
        Answer::Merged(merged) => {
            if let Some(rules) = front.opens.as_deref() {
                Box::pin(learn_session(
                    rules,
                    &merged.header,
                    max,
                    buf,
                    rd,
                    wr,
                    cluster,
                ))
                .await?;
            }
            let metered = front.metered.as_deref();
            Box::pin(relay_merged(merged, metered, max, buf, rd, wr, cluster)).await?;
            Ok(Some(merged.header.api_key))
        }
        Answer::Upstream(header) => {
            // A full Fetch that opened a session: its id is remembered.
            if let Some(rules) = front.opens.as_deref() {
                Box::pin(learn_session(rules, header, max, buf, rd, wr, cluster)).await?;
            }
            // The quota's hook: a metered request's response is counted
            // (Fetch) or given its throttle time (Produce).
            match front.metered.as_deref() {
                Some(m) => Box::pin(relay_metered(m, header, max, buf, rd, wr, cluster)).await?,
                None => Box::pin(relay(header, max, buf, rd, wr, cluster)).await?,
            }
            Ok(Some(header.api_key))
        }
    }
}

/// Passes on the broker's answer to a SaslAuthenticate the inspection
/// reads: held whole (it is small), read, written.
async fn relay_inspected<R, W>(
    front: &Slot,
    (inspection, principal): (&Inspection, &OnceLock<Arc<str>>),
    buf: &mut FrameBuf,
    rd: &mut R,
    wr: &mut W,
    cluster: &ClusterRuntime,
) -> Result<Option<i16>, ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let Answer::Upstream(header) = &front.answer else {
        return answer(front, buf, rd, wr, cluster).await;
    };
    let max = cluster.limits().max_frame_bytes;
    let mut clock = FrameClock::unlimited();
    let total = response_head(header, max, buf, rd, wr, &mut clock).await?;
    let frame = buf.hold(total, rd, wr, &mut clock).await?;
    inspection.answered(&frame, header, principal);
    buf.write(wr, &frame).await?;
    Ok(Some(header.api_key))
}

/// A response cut off mid-frame: the upstream closed with the requests
/// still queued unanswered.
fn closed(queue: &VecDeque<Slot>) -> ConnError {
    let waiting = queue.iter().filter(|s| s.answer.upstream()).count();
    ConnError::UpstreamClosed(waiting)
}

/// Passes on the response to a request the quota metered: a throttled
/// Produce's with its throttle time; a Fetch's counted by its size as its
/// head arrives, its `throttle_time_ms` raised in place to the throttle
/// time it earned (the next Fetch held until it conforms), then relayed
/// as usual.
async fn relay_metered<R, W>(
    metered: &Metered,
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
    match metered {
        Metered::Produce { throttle_ms } => {
            throttle::relay_produce(*throttle_ms, header, max, buf, rd, wr, cluster).await
        }
        Metered::Fetch { spec, client } => {
            let mut clock = FrameClock::unlimited();
            let total = response_head(header, max, buf, rd, wr, &mut clock).await?;
            let wait = throttle::fetched(spec, client, total, cluster);
            if !wait.is_zero() {
                throttle::patch_fetch(wait, header, total, buf, rd, wr, &mut clock).await?;
            }
            relay(header, max, buf, rd, wr, cluster).await
        }
    }
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
    let total = response_head(header, max, buf, rd, wr, &mut clock).await?;
    if streams(header.api_key, header.api_version, total) {
        let io = (&mut *rd, &mut *wr);
        return Box::pin(fetch::relay(header, total, buf, io, &mut clock, cluster)).await;
    }
    if !held_whole(header, cluster) || passes_as_it_came(header, total, buf, cluster)? {
        return buf.stream(total, rd, wr, &mut clock).await;
    }
    let frame = buf.hold(total, rd, wr, &mut clock).await?;
    write_transformed(frame, header, cluster, buf, wr).await
}
