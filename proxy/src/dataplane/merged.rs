//! Responses to requests a topic policy split: the upstream answered the
//! allowed part; its response is held whole (bounded by `maxFrameBytes` and
//! the buffer budget like any held frame: for a Fetch naming allowed and
//! denied topics, records included), rewritten like any other when it
//! carries broker addresses, merged with the denied topics' errors and
//! written. Kept apart from the relay of every other response, which this
//! does not change.

use tokio::io::{AsyncRead, AsyncWrite};

use super::block::charged;
use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{ConnError, FrameClock};
use super::held::{held_whole, response_head, transform};
use super::splice::Splice;
use super::split::Merged;

/// Passes on the response to a split request, merged; returns the size of
/// the upstream's response (what a metered Fetch counts).
pub(super) async fn relay_merged<R, W>(
    merged: &Merged,
    max: u32,
    buf: &mut FrameBuf,
    rd: &mut R,
    wr: &mut W,
    cluster: &ClusterRuntime,
) -> Result<usize, ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let header = &merged.header;
    let mut clock = FrameClock::unlimited();
    let total = response_head(header, max, buf, rd, wr, &mut clock).await?;
    let frame = buf.hold(total, rd, wr, &mut clock).await?;
    let upstream = if held_whole(header) {
        transform(&frame, header, cluster)?.to_bytes()
    } else {
        frame.clone()
    };
    let (policy, op, client) = (&merged.policy, merged.op, merged.client.as_str());
    let out = merged
        .merge
        .apply(&upstream, &mut |topic| policy.allows(op, topic, client))?;
    drop((frame, upstream));
    let charge = cluster.budget().force(out.len());
    buf.write(wr, &charged(out, charge)).await?;
    Ok(total)
}
