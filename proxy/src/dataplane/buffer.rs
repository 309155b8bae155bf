//! How a connection holds bytes, one [`FrameBuf`] per direction.
//!
//! An idle connection holds no buffer: it waits for a plain socket to be
//! readable, or for data in a small inline probe (TLS), so whatever passed
//! before, it costs next to nothing between frames. Once bytes arrive it
//! takes one chunk of [`CHUNK`] from the budget and reads into it (a plain
//! socket's straight away: one read for a frame of up to 16 KiB); frames of
//! any size pass through it, a chunk at a time, and it is given back once
//! empty at a frame boundary. While a frame with [`WIDE_CHUNK`] or more
//! still to come streams, the chunk is swapped for one of that size, when
//! the budget has room. Frames that pass together are written at once.
//!
//! A frame that must be held whole (to rewrite or to answer it) is copied
//! out of the chunk when it is already all there, or read into a `Block`
//! of exactly its size, charged for as long as any of it is referenced. A
//! chunk is read into without being cleared first (`chunk`).

use std::sync::Arc;
use std::task::{Context, Poll};

use prometheus_client::metrics::counter::Counter;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::direction::{CHUNK, ConnError, FrameClock, WIDE_CHUNK};
use super::splice::{self, SPLICE_AT_LEAST, Splice, Spliced};
use crate::budget::{Budget, Charge};

mod chunk;
mod hold;
#[cfg(test)]
mod tests;
use chunk::Chunk;

/// What an idle direction reads into while it waits for data.
const PROBE: usize = 64;

/// One direction's read buffer and what it has passed on but not written.
pub(super) struct FrameBuf {
    budget: Arc<Budget>,
    /// Bytes written out, counted for `sluice_bytes_total`.
    written: Counter,
    /// Of those, the ones spliced (`sluice_spliced_bytes_total`).
    spliced: Counter,
    chunk: Option<Chunk>,
    /// The chunk's bytes from `start` on are read and not written or taken.
    start: usize,
    /// The first `pending` of those are passed on, to be written in one go.
    pending: usize,
    probe: [u8; PROBE],
}

impl FrameBuf {
    pub(super) fn new(budget: Arc<Budget>, written: Counter, spliced: Counter) -> Self {
        FrameBuf {
            budget,
            written,
            spliced,
            chunk: None,
            start: 0,
            pending: 0,
            probe: [0; PROBE],
        }
    }

    /// Bytes read and not yet passed on or taken.
    pub(super) fn unread(&self) -> &[u8] {
        match &self.chunk {
            Some(chunk) => &chunk.filled()[self.start + self.pending..],
            None => &[],
        }
    }

    /// Where the bytes read end: the chunk's length (0 without one).
    fn end(&self) -> usize {
        self.chunk.as_ref().map_or(0, Chunk::len)
    }

    /// Puts `size` in the length prefix of the frame whose start is unread
    /// (a frame the proxy passes on grown or shrunk).
    pub(super) fn set_frame_size(&mut self, size: i32) {
        if let Some(chunk) = &mut self.chunk {
            let at = self.start + self.pending;
            chunk.filled_mut()[at..at + 4].copy_from_slice(&size.to_be_bytes());
        }
    }

    /// Raises the big-endian int32 at `at` of the unread bytes to at least
    /// `value` (a Fetch response's throttle time, patched as it streams).
    pub(super) fn raise_i32(&mut self, at: usize, value: i32) {
        let (start, end) = (self.start + self.pending + at, self.end());
        if let Some(chunk) = &mut self.chunk
            && start + 4 <= end
        {
            let field = &mut chunk.filled_mut()[start..start + 4];
            let old = i32::from_be_bytes([field[0], field[1], field[2], field[3]]);
            field.copy_from_slice(&old.max(value).to_be_bytes());
        }
    }

    /// Whether nothing is buffered: the direction can wait idle.
    pub(super) fn is_empty(&self) -> bool {
        self.start == self.end()
    }

    /// Marks the next `n` unread bytes as passed on; [`FrameBuf::flush`]
    /// writes them.
    pub(super) fn pass(&mut self, n: usize) {
        debug_assert!(n <= self.unread().len());
        self.pending += n;
    }

    /// Writes what was passed on.
    pub(super) async fn flush<W: AsyncWrite + Unpin>(&mut self, wr: &mut W) -> std::io::Result<()> {
        if self.pending > 0 {
            if let Some(chunk) = &self.chunk {
                wr.write_all(&chunk.filled()[self.start..self.start + self.pending])
                    .await?;
            }
            self.written.inc_by(self.pending as u64);
            self.start += self.pending;
            self.pending = 0;
        }
        if self.is_empty() {
            self.start = 0;
            if let Some(chunk) = &mut self.chunk {
                chunk.clear();
            }
        }
        wr.flush().await
    }

    /// Writes bytes the direction made or held itself, in turn after what
    /// was passed on before them.
    pub(super) async fn write<W: AsyncWrite + Unpin>(
        &mut self,
        wr: &mut W,
        bytes: &[u8],
    ) -> std::io::Result<()> {
        self.flush(wr).await?;
        wr.write_all(bytes).await?;
        self.written.inc_by(bytes.len() as u64);
        wr.flush().await
    }

    /// [`FrameBuf::write`] of a frame in pieces, one after the other.
    pub(super) async fn write_parts<W: AsyncWrite + Unpin>(
        &mut self,
        wr: &mut W,
        parts: &[bytes::Bytes],
    ) -> std::io::Result<()> {
        self.flush(wr).await?;
        for part in parts {
            wr.write_all(part).await?;
            self.written.inc_by(part.len() as u64);
        }
        wr.flush().await
    }

    /// Gives the chunk back when nothing is left in it: call at frame
    /// boundaries, after a flush.
    pub(super) fn release_if_empty(&mut self) {
        if self.is_empty() && self.pending == 0 {
            self.chunk = None;
            self.start = 0;
        }
    }

    /// Waits for the first bytes of the next frame holding no chunk, then
    /// [`FrameBuf::adopt`] them. On a plain socket it waits for the socket
    /// to be readable and then reads straight into a chunk, up to
    /// [`SPLICE_AT_LEAST`] of what has arrived: a frame smaller than that
    /// takes one read, not a probe's read and another, and the body of a
    /// larger one is still spliced. On anything else it reads into the
    /// inline probe. Dropping this wait loses nothing.
    pub(super) async fn read_idle<R: AsyncRead + Splice + Unpin>(
        &mut self,
        rd: &mut R,
    ) -> std::io::Result<usize> {
        debug_assert!(self.is_empty());
        self.release_if_empty();
        if rd.socket().is_none() {
            return rd.read(&mut self.probe).await;
        }
        loop {
            if let Some(tcp) = rd.socket() {
                std::future::poll_fn(|cx| tcp.poll_read_ready(cx)).await?;
            }
            // With room in the budget, as nearly always, nothing waits: a
            // chunk is taken and read into at once, and no future is kept.
            let read = std::future::poll_fn(|cx| {
                let charge = self.budget.try_reserve(CHUNK);
                Poll::Ready(charge.map(|c| self.poll_read_into_chunk(c, rd, cx)))
            })
            .await;
            match read {
                Some(Poll::Ready(n)) => return n,
                Some(Poll::Pending) => continue, // stale readiness
                None => {}
            }
            // Boxed: its state (the budget's wait, the chunk) exists only
            // while bytes are there to be read, not in an idle connection.
            if let Some(n) = Box::pin(self.read_into_chunk(rd)).await? {
                return Ok(n);
            }
        }
    }

    /// Reads what `rd` has now into a new chunk paid for by `charge`: the
    /// number of bytes read, the chunk kept when there were any; pending,
    /// the chunk given back, when there were none.
    fn poll_read_into_chunk<R: AsyncRead + Unpin>(
        &mut self,
        charge: Charge,
        rd: &mut R,
        cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<usize>> {
        let mut chunk = Chunk::new(charge);
        let read = chunk.poll_read(rd, cx, SPLICE_AT_LEAST);
        if let Poll::Ready(Ok(n)) = read
            && n > 0
        {
            self.chunk = Some(chunk);
            self.start = 0;
        }
        read
    }

    /// [`FrameBuf::poll_read_into_chunk`], waiting for the budget's room;
    /// `None` when the socket had nothing after all (stale readiness).
    async fn read_into_chunk<R: AsyncRead + Unpin>(
        &mut self,
        rd: &mut R,
    ) -> std::io::Result<Option<usize>> {
        let mut charge = Some(self.budget.reserve(CHUNK).await);
        let read = std::future::poll_fn(|cx| {
            Poll::Ready(charge.take().map(|c| self.poll_read_into_chunk(c, rd, cx)))
        })
        .await;
        match read {
            Some(Poll::Ready(n)) => n.map(Some),
            _ => Ok(None),
        }
    }

    /// Whether [`FrameBuf::adopt`] has work: the bytes read are in the probe,
    /// not in a chunk already (its callers box it only then).
    pub(super) fn adopts(&self) -> bool {
        self.chunk.is_none()
    }

    /// Takes a chunk from the budget (waiting while there is no room) and
    /// moves the `n` bytes [`FrameBuf::read_idle`] read into it, unless they
    /// were read into one already.
    pub(super) async fn adopt(&mut self, n: usize) {
        if self.chunk.is_some() {
            debug_assert_eq!((self.start, self.end()), (0, n));
            return;
        }
        let mut chunk = Chunk::new(self.budget.reserve(CHUNK).await);
        chunk.put(&self.probe[..n]);
        self.chunk = Some(chunk);
        self.start = 0;
    }

    /// Reads more of a frame that has started, into the free part of the
    /// chunk, within the frame's clock. Bytes the reader has ready now join
    /// what was passed on, to be written with it; what was passed on is
    /// written before any wait.
    pub(super) async fn read_more<R, W>(
        &mut self,
        rd: &mut R,
        wr: &mut W,
        clock: &mut FrameClock,
    ) -> Result<usize, ConnError>
    where
        R: AsyncRead + Splice + Unpin,
        W: AsyncWrite + Unpin,
    {
        if let Some(n) = self.read_ready(rd).await? {
            return Ok(n);
        }
        self.flush(wr).await?;
        if self.chunk.is_none() {
            let n = clock.read(self.read_idle(rd)).await?;
            if n > 0 {
                self.adopt(n).await;
            }
            return Ok(n);
        }
        let Some(chunk) = &mut self.chunk else {
            unreachable!("a chunk is held")
        };
        if chunk.is_full() {
            chunk.compact(self.start);
            self.start = 0;
        }
        clock.read(chunk.read(rd, usize::MAX)).await
    }

    /// Reads what `rd` has ready now (no wait) into the chunk's free room,
    /// when bytes passed on wait there to be written: they then go out
    /// together, in fewer and larger writes (a TLS stream yields one record
    /// of 16 KiB at a time, a socket what has arrived). `None` when nothing
    /// is ready, or nothing waits, or there is no room.
    async fn read_ready<R: AsyncRead + Unpin>(
        &mut self,
        rd: &mut R,
    ) -> std::io::Result<Option<usize>> {
        let Some(chunk) = &mut self.chunk else {
            return Ok(None);
        };
        if self.pending == 0 || chunk.is_full() {
            return Ok(None);
        }
        let ready = chunk.read_now(rd, usize::MAX).await.transpose()?;
        // At the end of the stream, what was passed on is written first.
        Ok(ready.filter(|&n| n > 0))
    }

    /// Passes a frame of `total` bytes, whose start is unread, on to `wr`:
    /// what is buffered now, then the rest as it arrives, a chunk at a time
    /// (or, between two plain sockets, spliced: see `splice`).
    pub(super) async fn stream<R, W>(
        &mut self,
        total: usize,
        rd: &mut R,
        wr: &mut W,
        clock: &mut FrameClock,
    ) -> Result<(), ConnError>
    where
        R: AsyncRead + Splice + Unpin,
        W: AsyncWrite + Splice + Unpin,
    {
        let mut left = total;
        loop {
            let n = left.min(self.unread().len());
            self.pass(n);
            left -= n;
            if left == 0 {
                return Ok(());
            }
            if splice::applies(left, rd, wr) {
                // Everything buffered was passed: written first, the
                // chunk given back, the rest moved by the kernel.
                self.flush(wr).await?;
                self.release_if_empty();
                let spliced = splice::body(
                    left,
                    rd,
                    wr,
                    clock,
                    &self.budget,
                    [&self.written, &self.spliced],
                );
                if let Spliced::Done = Box::pin(spliced).await? {
                    return Ok(());
                }
            }
            if left >= WIDE_CHUNK {
                self.widen(wr).await?;
            }
            if self.read_more(rd, wr, clock).await? == 0 {
                return Err(ConnError::ClosedMidFrame);
            }
        }
    }

    /// Swaps the chunk for a [`WIDE_CHUNK`] once it is empty (what was
    /// passed on written first), when the budget has room at once: a long
    /// frame then streams in a quarter as many reads and writes: the proxy's
    /// CPU per GB consumed 14-20% lower, produced 0-13% (docs/benchmarks.md,
    /// "a wide chunk for long frames").
    async fn widen<W: AsyncWrite + Unpin>(&mut self, wr: &mut W) -> std::io::Result<()> {
        if self.chunk.as_ref().is_none_or(|c| c.size() >= WIDE_CHUNK) {
            return Ok(());
        }
        self.flush(wr).await?;
        if self.is_empty() {
            // Taken while the narrow one is still held: without room, the
            // frame streams on through the narrow one.
            if let Some(charge) = self.budget.try_reserve(WIDE_CHUNK) {
                self.chunk = Some(Chunk::new(charge));
                self.start = 0;
            }
        }
        Ok(())
    }
}
