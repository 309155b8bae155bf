//! The quota filter on a connection, the way brokers enforce quotas
//! (KIP-219). Bytes are counted as they pass: a Produce request's frame
//! on the request side, a Fetch response's frame (its size is in its head)
//! on the response side. Over a quota, the response goes out at once
//! (a Produce response carrying `throttle_time_ms`), and the connection's
//! request side stops reading for the throttle time: nothing of the client
//! is read or buffered meanwhile, its own TCP window holds it back.
//!
//! Fetch responses keep the broker's `throttle_time_ms` for now: setting
//! the proxy's there waits for the streamed Fetch path (KIP-951).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_config::filter::QuotaSpec;
use sluice_kafka::frame::{
    RESPONSE_HEAD, RequestHeader, response_correlation_id, response_frame_size,
};
use sluice_kafka::throttle::produce_throttled;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::block::charged;
use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{ConnError, FrameClock};
use super::responses;
use super::splice::Splice;
use crate::quota::{Client, Kind};

/// Kafka's Produce key.
const PRODUCE: i16 = 0;
/// Kafka's Fetch key.
const FETCH: i16 = 1;

/// Until when a connection's request side does not read: set by either
/// direction, waited out by the request side between requests.
#[derive(Debug, Default)]
pub(super) struct Mute(Mutex<Option<Instant>>);

impl Mute {
    /// Keeps the connection muted until at least `until`.
    pub(super) fn extend(&self, until: Instant) {
        let mut at = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *at = Some(at.map_or(until, |t| t.max(until)));
    }

    /// The end of the mute, while it lasts.
    pub(super) fn until(&self, now: Instant) -> Option<Instant> {
        let at = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        at.filter(|t| *t > now)
    }
}

/// What the response to a metered request needs.
#[derive(Debug)]
pub(super) enum Metered {
    /// A Produce over its quota: the response carries the throttle time.
    Produce { throttle_ms: i32 },
    /// A Fetch under the quota: its response counts against the client's.
    Fetch {
        spec: QuotaSpec,
        client: Arc<Client>,
        mute: Arc<Mute>,
    },
}

/// A request the quota counts: Produce and Fetch.
pub(super) fn counts(header: &RequestHeader) -> bool {
    header.api_key == PRODUCE || header.api_key == FETCH
}

/// Counts a request of `total` bytes from `client_id` against `spec`;
/// mutes the connection when a Produce goes over it. What its response
/// needs (`None`: nothing).
pub(super) fn meter(
    spec: &QuotaSpec,
    cluster: &ClusterRuntime,
    header: &RequestHeader,
    total: usize,
    client_id: Option<&str>,
    mute: &mut Option<Arc<Mute>>,
) -> Option<Box<Metered>> {
    let client = cluster.quota.client(client_id, spec.max_client_ids);
    if header.api_key == FETCH {
        let mute = Arc::clone(mute.get_or_insert_with(Arc::default));
        return Some(Box::new(Metered::Fetch {
            spec: *spec,
            client,
            mute,
        }));
    }
    let now = Instant::now();
    let wait = cluster
        .quota
        .record(spec, &client, Kind::Produce, total as u64, now);
    if wait.is_zero() {
        return None;
    }
    mute.get_or_insert_with(Arc::default).extend(now + wait);
    let throttle_ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    Some(Box::new(Metered::Produce { throttle_ms }))
}

/// Waits out the connection's mute, if any, with what passed written
/// first; false when `stop` (the drain) comes first.
pub(super) async fn wait_muted<W: AsyncWrite + Unpin>(
    mute: &Option<Arc<Mute>>,
    buf: &mut FrameBuf,
    wr: &mut W,
    stop: &mut (impl Future<Output = ()> + Unpin),
) -> Result<bool, ConnError> {
    let Some(until) = mute.as_ref().and_then(|m| m.until(Instant::now())) else {
        return Ok(true);
    };
    buf.flush(wr).await?;
    buf.release_if_empty();
    tokio::select! {
        () = stop => Ok(false),
        () = tokio::time::sleep_until(until) => Ok(true),
    }
}

/// Passes on the response to a metered request: a throttled Produce's is
/// held (it is small), given its throttle time and passed like any other;
/// a Fetch's is counted by the size in its head, relayed as usual, then
/// the connection muted for the throttle time it earned.
pub(super) async fn relay<R, W>(
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
    let total = head(header, max, buf, rd, wr).await?;
    match metered {
        Metered::Produce { throttle_ms } => {
            let mut clock = FrameClock::unlimited();
            let held = buf.hold(total, rd, wr, &mut clock).await?;
            let patched = produce_throttled(&held, header, *throttle_ms)?;
            drop(held);
            let charge = cluster.budget().force(patched.len());
            let frame = charged(patched, charge);
            if !responses::held_whole(header) {
                buf.write(wr, &frame).await?;
                return Ok(());
            }
            // Produce v10 on carries broker endpoints: rewritten as relayed.
            let out = responses::transform(&frame, header, cluster)?;
            if out.shares(&frame) {
                return buf.write_parts(wr, out.parts()).await.map_err(Into::into);
            }
            drop(frame);
            let out = out.to_bytes();
            let charge = cluster.budget().force(out.len());
            buf.write(wr, &charged(out, charge)).await?;
            Ok(())
        }
        Metered::Fetch { spec, client, mute } => {
            let now = Instant::now();
            let wait = cluster
                .quota
                .record(spec, client, Kind::Fetch, total as u64, now);
            responses::relay(header, max, buf, rd, wr, cluster).await?;
            if wait > Duration::ZERO {
                mute.extend(Instant::now() + wait);
            }
            Ok(())
        }
    }
}

/// Reads until the head of the response to `header` is in `buf`: its size.
async fn head<R, W>(
    header: &RequestHeader,
    max: u32,
    buf: &mut FrameBuf,
    rd: &mut R,
    wr: &mut W,
) -> Result<usize, ConnError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
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
    Ok(total)
}
