//! How long the proxy waits for a client to take the bytes it writes.
//!
//! Frames on their way to a client are charged to the process-wide budget
//! until they are written (held responses, the proxy's own answers, the
//! chunk a streamed response passes through). A client that stops reading
//! would keep them, and its in-flight slots, for as long as it stays
//! connected; enough such clients fill the budget and every other
//! connection stops reading. So each frame written to a client gets
//! `limits.frameTimeout` of waiting for the client, as each frame read from
//! one does: only time the client makes the proxy wait counts (a write the
//! socket does not take), and the clock starts again at every frame. Past
//! it, the write fails with [`WriteStalled`] and the connection closes,
//! returning its memory.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use std::os::fd::BorrowedFd;

use tokio::io::AsyncWrite;
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

use super::direction::WriteStalled;
use super::splice::Splice;

/// A writer to a client whose stalled writes time out.
pub(super) struct Patient<W> {
    inner: W,
    limit: Duration,
    /// What is left of the current frame's time.
    left: Duration,
    /// Since when the current write has waited, if it waits.
    since: Option<Instant>,
    /// Made at the first write that waits: most connections never need it.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<W: AsyncWrite + Unpin> Patient<W> {
    /// Writes to `inner`, `limit` of waiting per frame.
    pub(super) fn new(inner: W, limit: Duration) -> Self {
        Patient {
            inner,
            limit,
            left: limit,
            since: None,
            timer: None,
        }
    }

    /// A new frame: its own time, in full, `limit` from now on (a reload
    /// may have changed it in place).
    pub(super) fn next_frame(&mut self, limit: Duration) {
        self.limit = limit;
        self.left = limit;
        self.since = None;
    }

    /// Runs one poll of the inner writer against the frame's clock.
    fn timed<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(Pin<&mut W>, &mut Context<'_>) -> Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if let Poll::Ready(r) = poll(Pin::new(&mut self.inner), cx) {
            if let Some(since) = self.since.take() {
                self.left = self.left.saturating_sub(since.elapsed());
            }
            return Poll::Ready(r);
        }
        let timer = match (self.since, &mut self.timer) {
            (Some(_), Some(timer)) => timer,
            (_, timer) => {
                let deadline = Instant::now() + self.left;
                self.since = Some(Instant::now());
                let timer =
                    timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                timer.as_mut().reset(deadline);
                timer
            }
        };
        ready!(timer.as_mut().poll(cx));
        Poll::Ready(Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            WriteStalled(self.limit),
        )))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Patient<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.get_mut().timed(cx, |w, cx| w.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.get_mut()
            .timed(cx, |w, cx| w.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.get_mut().timed(cx, AsyncWrite::poll_flush)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.get_mut().timed(cx, AsyncWrite::poll_shutdown)
    }
}

impl<W: AsyncWrite + Splice + Unpin> Splice for Patient<W> {
    fn socket(&self) -> Option<&TcpStream> {
        self.inner.socket()
    }

    fn poll_splice_out(
        &mut self,
        cx: &mut Context<'_>,
        pipe: BorrowedFd<'_>,
        len: usize,
    ) -> Poll<std::io::Result<usize>> {
        self.timed(cx, |w, cx| w.get_mut().poll_splice_out(cx, pipe, len))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    fn stalled(e: &std::io::Error) -> bool {
        e.get_ref().is_some_and(|i| i.is::<WriteStalled>())
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_nobody_takes_fails_at_the_limit() {
        let (mut reader, writer) = tokio::io::duplex(16);
        let mut w = Patient::new(writer, Duration::from_secs(30));
        let started = Instant::now();
        let e = w.write_all(&[7; 64]).await.unwrap_err();
        assert!(stalled(&e), "{e}");
        let waited = started.elapsed();
        assert!(waited >= Duration::from_secs(30) && waited < Duration::from_secs(31));
        // What the client had room for did pass.
        let mut got = [0; 16];
        tokio::io::AsyncReadExt::read_exact(&mut reader, &mut got)
            .await
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn only_waiting_counts_and_each_frame_gets_the_whole_limit() {
        let (mut reader, writer) = tokio::io::duplex(16);
        let mut w = Patient::new(writer, Duration::from_secs(30));
        // A client that takes 16 bytes every 20 s: each frame of 16 waits
        // 20 s, three frames 60 s in all, and none fails.
        let drain = tokio::spawn(async move {
            let mut got = [0; 16];
            loop {
                tokio::time::sleep(Duration::from_secs(20)).await;
                if tokio::io::AsyncReadExt::read(&mut reader, &mut got)
                    .await
                    .unwrap()
                    == 0
                {
                    return;
                }
            }
        });
        for _ in 0..3 {
            w.write_all(&[1; 16]).await.unwrap();
            w.next_frame(Duration::from_secs(30));
        }
        // Within one frame the waits add up: a frame of 32 would wait 40 s.
        let e = w.write_all(&[1; 32]).await.unwrap_err();
        assert!(stalled(&e), "{e}");
        drop(w);
        drain.await.unwrap();
    }
}
