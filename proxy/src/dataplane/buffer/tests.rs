//! A long frame streams through a wide chunk: fewer, larger reads and
//! writes, the same bytes, and nothing held after it.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::FrameBuf;
use crate::budget::Budget;
use crate::dataplane::direction::{CHUNK, FrameClock, WIDE_CHUNK};
use crate::dataplane::splice::Splice;

/// Bytes in memory, handed out as fast as asked for; counts the reads.
struct Source {
    bytes: Vec<u8>,
    at: usize,
    reads: usize,
}

impl AsyncRead for Source {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = buf.remaining().min(self.bytes.len() - self.at);
        let at = self.at;
        buf.put_slice(&self.bytes[at..at + n]);
        self.at += n;
        self.reads += 1;
        Poll::Ready(Ok(()))
    }
}

impl Splice for Source {}

/// Takes every byte; keeps each write's size.
#[derive(Default)]
struct Sink {
    bytes: Vec<u8>,
    writes: Vec<usize>,
}

impl AsyncWrite for Sink {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.bytes.extend_from_slice(buf);
        self.writes.push(buf.len());
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl Splice for Sink {}

const FRAME: usize = 1 << 20;

/// Streams one frame of [`FRAME`] bytes (its length prefix included)
/// through a direction whose budget is `budget` bytes.
async fn stream_one(budget: usize) -> (Source, Sink, Arc<Budget>) {
    let bytes: Vec<u8> = (0..FRAME).map(|i| (i % 251) as u8).collect();
    let mut rd = Source {
        bytes,
        at: 0,
        reads: 0,
    };
    let mut wr = Sink::default();
    let budget = Arc::new(Budget::new(
        budget as u64,
        Gauge::default(),
        Gauge::default(),
        Counter::default(),
    ));
    let mut buf = FrameBuf::new(Arc::clone(&budget), Counter::default(), Counter::default());
    let n = buf.read_idle(&mut rd).await.unwrap();
    buf.adopt(n).await;
    let mut clock = FrameClock::unlimited();
    buf.stream(FRAME, &mut rd, &mut wr, &mut clock)
        .await
        .unwrap();
    buf.flush(&mut wr).await.unwrap();
    buf.release_if_empty();
    (rd, wr, budget)
}

#[tokio::test]
async fn a_long_frame_streams_through_a_wide_chunk() {
    let (rd, wr, budget) = stream_one(4 << 20).await;
    assert_eq!(wr.bytes, rd.bytes, "every byte, in order");
    // Narrow chunks all the way would take FRAME / CHUNK = 16 reads.
    assert!(rd.reads <= 8, "{} reads", rd.reads);
    let widest = wr.writes.iter().max().copied().unwrap_or(0);
    assert!(widest > CHUNK && widest <= WIDE_CHUNK, "{:?}", wr.writes);
    assert_eq!(budget.used(), 0, "nothing held after the frame");
}

#[tokio::test]
async fn without_room_for_a_wide_chunk_a_frame_streams_through_narrow_ones() {
    let (rd, wr, budget) = stream_one(WIDE_CHUNK - 1).await;
    assert_eq!(wr.bytes, rd.bytes, "every byte, in order");
    // A chunk's worth at a time: not fewer, and not a probe's worth.
    let reads = rd.reads;
    assert!(
        (FRAME / CHUNK..=FRAME / CHUNK + 4).contains(&reads),
        "{reads} reads"
    );
    assert!(wr.writes.iter().all(|&w| w <= CHUNK), "{:?}", wr.writes);
    assert_eq!(budget.used(), 0);
}
