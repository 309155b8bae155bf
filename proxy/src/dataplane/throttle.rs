//! The quota filter on a connection: a limit the proxy enforces. A
//! Produce's frame is counted (its place reserved in its buckets) when its
//! head is read, and the request is held, the rest of it and the
//! connection unread, until its turn: its client's and its cluster's
//! buckets shared by every connection, nothing more is buffered, and the
//! client's own TCP window holds it back. A Fetch is held until its
//! buckets conform, and its response is counted as its head arrives.
//! Responses carry `throttle_time_ms`, the time until the client's next
//! request conforms (KIP-219), so clients that honour it are never held.
//!
//! A Fetch response's `throttle_time_ms` is raised in place as its head
//! arrives ([`patch_fetch`]), whether it passes as it came or split by a
//! topic policy (`merged`): the longer of the broker's and the quota's.

use std::time::Duration;

use bytes::Bytes;
use sluice_config::filter::QuotaSpec;
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::throttle::{fetch_throttle_at, fetch_throttled, produce_throttled};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::block::charged;
use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{ConnError, FrameClock};
use super::held::{held_whole, response_head, write_transformed};
use super::metered::Metered;
use super::splice::Splice;
use crate::quota::Holders;

/// Kafka's Produce key.
const PRODUCE: i16 = 0;
/// Kafka's Fetch key.
const FETCH: i16 = 1;

/// A request the quota counts: Produce and Fetch.
pub(super) fn counts(header: &RequestHeader) -> bool {
    header.api_key == PRODUCE || header.api_key == FETCH
}

/// Meters a request of `total` bytes from `client_id` (and `principal`)
/// against `spec`: a
/// Produce is counted (its place reserved), a Fetch's turn looked up.
/// When it may be forwarded, and what its response needs (`None`:
/// nothing).
pub(super) fn meter(
    spec: &QuotaSpec,
    cluster: &ClusterRuntime,
    header: &RequestHeader,
    total: usize,
    (client_id, principal): (Option<&str>, Option<&str>),
) -> (Instant, Option<Box<Metered>>) {
    let client = Holders {
        client: cluster.quota.client(client_id, spec.max_client_ids),
        principal: cluster.quota.principal(spec, principal),
    };
    let now = Instant::now();
    if header.api_key == FETCH {
        let at = cluster.quota.fetch_turn(spec, client.get(), now);
        let spec = *spec;
        return (at, Some(Box::new(Metered::Fetch { spec, client })));
    }
    let turn = cluster.quota.reserve(spec, client.get(), total as u64, now);
    if turn.throttle.is_zero() {
        return (turn.start, None);
    }
    let throttle_ms = i32::try_from(turn.throttle.as_millis()).unwrap_or(i32::MAX);
    (turn.start, Some(Box::new(Metered::Produce { throttle_ms })))
}

/// Holds a request whose head is read until `until`, what passed before it
/// written first; false when `stop` (the drain) comes first. A quota
/// removed meanwhile lets it pass at once.
pub(super) async fn hold<W: AsyncWrite + Unpin>(
    until: Instant,
    cluster: &ClusterRuntime,
    buf: &mut FrameBuf,
    wr: &mut W,
    stop: &mut (impl Future<Output = ()> + Unpin),
) -> Result<bool, ConnError> {
    if until <= Instant::now() {
        return Ok(true);
    }
    buf.flush(wr).await?;
    let removed = cluster.quota.removed();
    tokio::pin!(removed);
    removed.as_mut().enable();
    if cluster.filters().quota.is_none() {
        return Ok(true);
    }
    tokio::select! {
        () = stop => Ok(false),
        () = tokio::time::sleep_until(until) => Ok(true),
        () = removed => Ok(true),
    }
}

/// Passes on the response to a throttled Produce: held (it is small),
/// given its throttle time, and rewritten like any other when it carries
/// broker endpoints (v10 on).
pub(super) async fn relay_produce<R, W>(
    throttle_ms: i32,
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
    let held = buf.hold(total, rd, wr, &mut clock).await?;
    let patched = produce_throttled(&held, header, throttle_ms)?;
    drop(held);
    let charge = cluster.budget().force(patched.len());
    let frame = charged(patched, charge);
    if !held_whole(header, cluster) {
        buf.write(wr, &frame).await?;
        return Ok(());
    }
    write_transformed(frame, header, cluster, buf, wr).await
}

/// A Fetch response of `total` bytes is passed on: counted against the
/// client's quota; the throttle time it carries, until the client's next
/// Fetch conforms.
pub(super) fn fetched(
    spec: &QuotaSpec,
    client: &Holders,
    total: usize,
    cluster: &ClusterRuntime,
) -> Duration {
    cluster
        .quota
        .fetched(spec, client.get(), total as u64, Instant::now())
}

/// An answer the proxy made itself to a metered request, as a broker's
/// would be: a throttled Produce's carries its throttle time; a Fetch's
/// counts against the client's quota and carries the throttle time it
/// earned.
pub(super) fn local_answer(
    metered: &Metered,
    header: &RequestHeader,
    answer: Bytes,
    cluster: &ClusterRuntime,
) -> Bytes {
    let patched = match metered {
        Metered::Produce { throttle_ms } => produce_throttled(&answer, header, *throttle_ms).ok(),
        Metered::Fetch { spec, client } => {
            let wait = fetched(spec, client, answer.len(), cluster);
            let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
            (ms > 0).then(|| fetch_throttled(&answer, header.api_version, ms))
        }
    };
    match patched {
        Some(patched) if patched != answer => {
            drop(answer);
            let charge = cluster.budget().force(patched.len());
            charged(patched, charge)
        }
        _ => answer,
    }
}

/// The most a Fetch response's head is read to find its throttle time (the
/// header's tagged fields are empty in practice): past it, or at v0 (no
/// such field), the response passes as it came; the next Fetch is held all
/// the same.
const FETCH_HEAD_MAX: usize = 64;

/// Raises the `throttle_time_ms` of the Fetch response whose head is in
/// `buf` (of `total` bytes) to `wait`, in place, reading its first bytes
/// if they are not all there yet. A broker's own longer time is kept.
pub(super) async fn patch_fetch<R, W>(
    wait: Duration,
    header: &RequestHeader,
    total: usize,
    buf: &mut FrameBuf,
    rd: &mut R,
    wr: &mut W,
    clock: &mut FrameClock,
) -> Result<(), ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let at = loop {
        if let Some(at) = fetch_throttle_at(buf.unread(), header.api_version) {
            break at;
        }
        if header.api_version < 1 || buf.unread().len() >= total.min(FETCH_HEAD_MAX) {
            return Ok(());
        }
        if buf.read_more(rd, wr, clock).await? == 0 {
            return Err(ConnError::ClosedMidFrame);
        }
    };
    if at + 4 <= total {
        buf.raise_i32(at, i32::try_from(wait.as_millis()).unwrap_or(i32::MAX));
    }
    Ok(())
}
