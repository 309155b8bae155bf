//! [`FrameBuf::hold`]: a frame taken whole.

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use super::FrameBuf;
use crate::dataplane::block::{Block, charged};
use crate::dataplane::direction::{ConnError, FrameClock};

impl FrameBuf {
    /// Takes a frame of `total` bytes, whose start is unread, whole: copied
    /// out of the chunk when all of it is there, else read into a block of
    /// its size (charged to the budget first, waiting for room, the chunk
    /// given back meanwhile). What was passed on before it is written first.
    pub(in crate::dataplane) async fn hold<R, W>(
        &mut self,
        total: usize,
        rd: &mut R,
        wr: &mut W,
        clock: &mut FrameClock,
    ) -> Result<Bytes, ConnError>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        self.flush(wr).await?;
        let available = self.unread().len();
        if available >= total {
            let frame = Bytes::copy_from_slice(&self.unread()[..total]);
            self.start += total;
            return Ok(charged(frame, self.budget.force(total)));
        }
        let charge = self.budget.reserve_frame(total).await;
        let mut block = Block::new(total, charge)?;
        block.put(self.unread());
        self.start = self.end();
        // Everything buffered was this frame's: the chunk is free.
        self.release_if_empty();
        while !block.is_full() {
            let n = clock.read(rd.read(block.spare())).await?;
            if n == 0 {
                return Err(ConnError::ClosedMidFrame);
            }
            block.advance(n);
        }
        Ok(block.freeze())
    }
}
