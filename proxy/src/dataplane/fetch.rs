//! Fetch responses of v16 and later, larger than a buffer: their records
//! stream (spliced between plaintext sockets) while their endpoints, at the
//! end, are rewritten (KIP-951). `sluice_kafka::streamed` says how: the
//! size goes out first, grown by a reserve the rewritten tail is padded to
//! fill, so nothing before the tail is held. A split Fetch's refused
//! topics go first in its response the same way (`prepend`): their entries
//! are known before the response comes, so the size grows by them too.

use sluice_kafka::api_name;
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::policy::Prepended;
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
    io: (&mut R, &mut W),
    clock: &mut FrameClock,
    cluster: &ClusterRuntime,
) -> Result<(), ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let version = header.api_version;
    let reserve = cluster.advertised.tail_reserve();
    let size = i32::try_from(total - 4 + reserve).map_err(|_| {
        fail(
            version,
            format!("a response of {total} bytes grown by {reserve}"),
        )
    })?;
    buf.set_frame_size(size);
    let rest = Rest {
        walk: Walk::fetch(version),
        left: total,
        reserve,
    };
    walk(header, rest, buf, io, clock, cluster).await
}

/// [`relay`] of the response to a split Fetch: `refused`'s entries go
/// first in its topics ([`prepend`]; the size grown by them and by the
/// reserve), then the rest as ever.
pub(super) async fn relay_refused<R, W>(
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
    let reserve = cluster.advertised.tail_reserve();
    let (topics, left) = prepend(refused, total, reserve, buf, (&mut *rd, &mut *wr), clock).await?;
    let rest = Rest {
        walk: Walk::fetch_topics(header.api_version, topics),
        left,
        reserve,
    };
    walk(header, rest, buf, (rd, wr), clock, cluster).await
}

/// Puts `refused`'s entries first in the topics of the Fetch response of
/// `total` bytes whose head is unread in `buf`: its size prefix grown by
/// them and by `grow` (the KIP-951 reserve, or 0), its head up to its
/// topics' count passed, the new count and the entries written, the old
/// count dropped. Returns the upstream's topic count and how many bytes of
/// its frame are left.
pub(super) async fn prepend<R, W>(
    refused: &Prepended,
    total: usize,
    grow: usize,
    buf: &mut FrameBuf,
    (rd, wr): (&mut R, &mut W),
    clock: &mut FrameClock,
) -> Result<(u32, usize), ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let version = refused.version();
    let found = loop {
        let ready = buf.unread().len().min(total);
        if let Some(found) = refused.find(&buf.unread()[..ready])? {
            break found;
        }
        if ready >= total.min(CHUNK) {
            return Err(fail(version, "no topics within the response's head".into()));
        }
        if buf.read_more(rd, wr, clock).await? == 0 {
            return Err(ConnError::ClosedMidFrame);
        }
    };
    let put = refused.bytes(&found)?;
    let size = (total - 4 - found.len + put.len())
        .checked_add(grow)
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| fail(version, format!("a response of {total} bytes grown")))?;
    buf.set_frame_size(size);
    buf.pass(found.at);
    buf.write(wr, &put).await?;
    // The upstream's count, replaced: taken out of the buffer, not sent.
    drop(buf.hold(found.len, rd, wr, clock).await?);
    Ok((found.count, total - found.at - found.len))
}

/// What is left of a Fetch response to walk: from where `walk` is, `left`
/// bytes of the upstream's frame, its tail rewritten into `reserve`.
struct Rest {
    walk: Walk,
    left: usize,
    reserve: usize,
}

/// Walks the rest of a Fetch response: its parts checked and passed, its
/// records streamed, its tail held and rewritten.
async fn walk<R, W>(
    header: &RequestHeader,
    rest: Rest,
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
    let Rest {
        mut walk,
        mut left,
        reserve,
    } = rest;
    loop {
        let ready = buf.unread().len().min(left);
        match walk.next(&buf.unread()[..ready])? {
            Some(Part::Checked(n)) => {
                buf.pass(n);
                left -= n;
            }
            Some(Part::Records(n)) if n > left => {
                return Err(fail(version, format!("records of {n} bytes, {left} left")));
            }
            Some(Part::Records(n)) => {
                buf.stream(n, rd, wr, clock).await?;
                left -= n;
            }
            Some(Part::Tail) => break,
            None if ready == left => {
                let reason = format!("the response ends in a part, {left} bytes");
                return Err(fail(version, reason));
            }
            None if ready >= CHUNK => {
                return Err(fail(version, format!("a part of over {CHUNK} bytes")));
            }
            None => {
                if buf.read_more(rd, wr, clock).await? == 0 {
                    return Err(ConnError::ClosedMidFrame);
                }
            }
        }
    }
    if left > MAX_TAIL {
        return Err(fail(version, format!("tagged fields of {left} bytes")));
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

fn fail(version: i16, reason: String) -> ConnError {
    ConnError::Rewrite(RewriteError {
        api: "Fetch".to_owned(),
        version,
        reason,
    })
}
