//! Responses to requests a topic policy split. A Fetch's response is not
//! held for it: the refused topics' entries (encoded when the request was
//! judged) go first in its topics as it streams, its records spliced and
//! its endpoints rewritten as ever (`fetch`); held only when it is held
//! anyway (a v16+ response of up to a buffer, rewritten exactly). Any other
//! API's response (no records: small) is held whole (bounded by
//! `maxFrameBytes` and the buffer budget like any held frame), rewritten
//! like any other when it carries broker addresses, merged with the denied
//! topics' errors and written; one that cannot be read is never passed on
//! unjudged: the proxy answers with an error instead. A quota's throttle
//! time goes in either way, unless the broker's own is longer. Kept apart
//! from the relay of every other response, which this does not change.

use sluice_config::policy::Client;
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::policy::Prepended;
use sluice_kafka::streamed::streams;
use sluice_kafka::throttle::produce_throttled;
use tokio::io::{AsyncRead, AsyncWrite};

use super::block::charged;
use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{ConnError, FrameClock};
use super::fetch;
use super::held::{held_whole, response_head, transform, write_transformed};
use super::metered::Metered;
use super::splice::Splice;
use super::split::Merged;
use super::throttle;

/// Passes on the response to a split request, merged; a metered Fetch's
/// counted against the quota as its head arrives, its throttle time raised
/// to the quota's; a throttled Produce's given its throttle time.
pub(super) async fn relay_merged<R, W>(
    merged: &Merged,
    metered: Option<&Metered>,
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
    let header = &merged.header;
    let mut clock = FrameClock::unlimited();
    let total = response_head(header, max, buf, rd, wr, &mut clock).await?;
    let mut throttle_ms = None;
    match metered {
        Some(Metered::Fetch { spec, client }) => {
            let wait = throttle::fetched(spec, client, total, cluster);
            if !wait.is_zero() {
                throttle::patch_fetch(wait, header, total, buf, rd, wr, &mut clock).await?;
            }
        }
        Some(Metered::Produce { throttle_ms: ms }) => throttle_ms = Some(*ms),
        None => {}
    }
    if let Some(refused) = merged.merge.prepended() {
        let io = (&mut *rd, &mut *wr);
        return Box::pin(relay_fetch(
            header, total, refused, buf, io, &mut clock, cluster,
        ))
        .await;
    }
    let frame = buf.hold(total, rd, wr, &mut clock).await?;
    let upstream = if held_whole(header, cluster) {
        transform(&frame, header, cluster)?.to_bytes()
    } else {
        frame.clone()
    };
    let (policy, op) = (&merged.policy, merged.op);
    let client = Client {
        id: &merged.client,
        principal: merged.principal.as_deref(),
    };
    let judged = merged
        .merge
        .apply(&upstream, &mut |topic| policy.allows(op, topic, client));
    drop((frame, upstream));
    // An answer the policy cannot judge is never passed on: the proxy
    // answers with an error instead, and the connection stays open.
    let mut out = match judged {
        Ok(out) => out,
        Err(error) => {
            tracing::warn!(cluster = %cluster.name(), %error, "upstream answer not judged: refused");
            merged.merge.refused()?
        }
    };
    if let Some(ms) = throttle_ms {
        out = produce_throttled(&out, header, ms)?;
    }
    let charge = cluster.budget().force(out.len());
    buf.write(wr, &charged(out, charge)).await?;
    Ok(())
}

/// The response of `total` bytes to a split Fetch, `refused`'s entries
/// first in its topics: streamed with its endpoints rewritten (v16+,
/// larger than a buffer), held and rewritten whole (v16+, smaller), or
/// streamed as it comes (before v16).
async fn relay_fetch<R, W>(
    header: &RequestHeader,
    total: usize,
    refused: &Prepended,
    buf: &mut FrameBuf,
    (rd, wr): (&mut R, &mut W),
    clock: &mut FrameClock,
    cluster: &ClusterRuntime,
) -> Result<(), ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    if streams(header.api_key, header.api_version, total) {
        let io = (&mut *rd, &mut *wr);
        return fetch::relay_refused(header, total, refused, buf, io, clock, cluster).await;
    }
    if held_whole(header, cluster) {
        let frame = buf.hold(total, rd, wr, clock).await?;
        let out = refused.insert(&frame)?;
        drop(frame);
        let charge = cluster.budget().force(out.len());
        return write_transformed(charged(out, charge), header, cluster, buf, wr).await;
    }
    let (_, left) = fetch::prepend(refused, total, 0, buf, (&mut *rd, &mut *wr), clock).await?;
    buf.stream(left, rd, wr, clock).await
}
