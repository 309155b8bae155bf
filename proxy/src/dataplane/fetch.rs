//! Fetch responses of v16 and later, larger than a buffer: their records
//! stream (spliced between plaintext sockets) while their endpoints, at the
//! end, are rewritten (KIP-951). `sluice_kafka::streamed` says how: the
//! size goes out first, grown by a reserve the rewritten tail is padded to
//! fill, so nothing before the tail is held.

use sluice_kafka::api_name;
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::rewrite::{RewriteError, rewrite_tail};
use sluice_kafka::streamed::{MAX_TAIL, Part, Walk};
use tokio::io::{AsyncRead, AsyncWrite};

use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{CHUNK, ConnError, FrameClock};
use super::splice::Splice;

/// Passes on the Fetch response of `total` bytes (prefix included) to
/// `header`, whose head is unread in `buf`: its parts checked and passed as
/// they arrive, its records streamed, its tail held and rewritten.
pub(super) async fn relay<R, W>(
    header: &RequestHeader,
    total: usize,
    buf: &mut FrameBuf,
    (rd, wr): (&mut R, &mut W),
    clock: &mut FrameClock,
    cluster: &ClusterRuntime,
) -> Result<(), ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let version = header.api_version;
    let fail = |reason: String| {
        ConnError::Rewrite(RewriteError {
            api: "Fetch".to_owned(),
            version,
            reason,
        })
    };
    let reserve = cluster.advertised.tail_reserve();
    let size = i32::try_from(total - 4 + reserve)
        .map_err(|_| fail(format!("a response of {total} bytes grown by {reserve}")))?;
    buf.set_frame_size(size);
    let mut walk = Walk::fetch(version);
    let mut left = total;
    loop {
        let ready = buf.unread().len().min(left);
        match walk.next(&buf.unread()[..ready])? {
            Some(Part::Checked(n)) => {
                buf.pass(n);
                left -= n;
            }
            Some(Part::Records(n)) if n > left => {
                return Err(fail(format!("records of {n} bytes, {left} left")));
            }
            Some(Part::Records(n)) => {
                buf.stream(n, rd, wr, clock).await?;
                left -= n;
            }
            Some(Part::Tail) => break,
            None if ready == left => {
                return Err(fail(format!("the response ends in a part, {left} bytes")));
            }
            None if ready >= CHUNK => {
                return Err(fail(format!("a part of over {CHUNK} bytes")));
            }
            None => {
                if buf.read_more(rd, wr, clock).await? == 0 {
                    return Err(ConnError::ClosedMidFrame);
                }
            }
        }
    }
    if left > MAX_TAIL {
        return Err(fail(format!("tagged fields of {left} bytes")));
    }
    let tail = buf.hold(left, rd, wr, clock).await?;
    let out = rewrite_tail(&tail, version, &cluster.advertised, reserve)?;
    drop(tail);
    if out.changed {
        cluster.learn(&out.learned);
        if !out.unmapped.is_empty() {
            cluster.unmapped(&out.unmapped);
        }
        if !out.crowded.is_empty() {
            tracing::debug!(cluster = %cluster.name(), nodes = ?out.crowded, "endpoints left out of a fetch response: no room");
        }
        cluster.metrics.rewrite(api_name(header.api_key));
    }
    buf.write(wr, &out.bytes).await?;
    Ok(())
}
