//! Zero-copy streaming between two plain TCP sockets.
//!
//! When both ends of a direction are plaintext sockets, the body of a frame
//! that streams through (every request, every response that is not
//! rewritten) is moved with `splice(2)`: from the reading socket into a
//! pipe, and from the pipe into the writing socket. The bytes never enter
//! the proxy's memory and are never copied by the CPU: the pipe only holds
//! references to the kernel's own pages. The frame's head was already read
//! (and decided on) through the direction's chunk, as before.
//!
//! A pipe is taken for one frame's body and given back empty; idle pipes are
//! kept for reuse, up to [`POOL`] of them. While a pipe is in use its
//! capacity is charged to the budget, as the chunk it stands in for would be.
//! Should the kernel refuse `splice` on a socket (an emulated kernel, say),
//! the proxy says so once, stops splicing, and copies as it did before.
//!
//! Splicing saves the proxy its copies but not the peer that receives the
//! bytes on this same host (over loopback the kernel hands that peer the
//! spliced pages as they are): measured, a broker fed by splice spent 6–11%
//! more CPU per GB and a consumer 5–10% more, so produce throughput, which
//! the broker bounds, fell by 4–5% (docs/benchmarks.md, "Issue 28: splice
//! and the receiving peer"). So by default ([`Splicing::Auto`]) a direction
//! splices only into a socket whose peer is on another host.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use prometheus_client::metrics::counter::Counter;
use rustix::pipe::{PipeFlags, SpliceFlags};
use tokio::io::{AsyncWrite, Interest};
use tokio::net::TcpStream;
use tokio::net::tcp::{ReadHalf, WriteHalf};

use super::direction::{CHUNK, ConnError, FrameClock};
use super::own::on_this_host;
use super::stream::BoxIo;
use crate::budget::Budget;

/// Idle pipes kept for the next frames (two descriptors each).
const POOL: usize = 64;
/// Below this many bytes left of a frame, copying through the chunk costs
/// less than the pipe's own system calls.
pub(super) const SPLICE_AT_LEAST: usize = 16 * 1024;

/// Whether splicing still works here; cleared at the first refusal.
static ENABLED: AtomicBool = AtomicBool::new(true);
/// The process's [`Splicing`], as its discriminant.
static MODE: AtomicU8 = AtomicU8::new(Splicing::Auto as u8);

/// When the bodies of streamed frames are spliced (`sluice-proxy run
/// --splice`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Splicing {
    /// Into sockets whose peer is on another host; bytes for a peer on
    /// this host (loopback, or this host's own address) are copied.
    #[default]
    Auto = 0,
    /// Between any two plaintext sockets.
    Always = 1,
    /// Never: every byte is copied through the proxy's chunks.
    Never = 2,
}

impl Splicing {
    /// Sets the process's mode; connections opened from now on follow it.
    pub fn choose(self) {
        MODE.store(self as u8, Ordering::Relaxed);
    }

    fn current() -> Splicing {
        match MODE.load(Ordering::Relaxed) {
            1 => Splicing::Always,
            2 => Splicing::Never,
            _ => Splicing::Auto,
        }
    }

    /// Whether bytes are spliced into a socket connected from `local` to
    /// `peer`.
    fn into_peer(self, local: SocketAddr, peer: SocketAddr) -> bool {
        match self {
            Splicing::Always => true,
            Splicing::Never => false,
            Splicing::Auto => !on_this_host(local, peer),
        }
    }
}

/// Whether this connection splices into `tcp`, by the process's mode and
/// where `tcp`'s peer is (asked once per connection).
pub(super) fn towards(tcp: &TcpStream) -> bool {
    let mode = Splicing::current();
    match (mode, tcp.local_addr(), tcp.peer_addr()) {
        (Splicing::Auto, Ok(local), Ok(peer)) => mode.into_peer(local, peer),
        (Splicing::Auto, _, _) => false,
        (mode, _, _) => mode == Splicing::Always,
    }
}

/// A writing half that never splices: its peer is on this host ([`towards`]).
/// A type of its own rather than a flag beside the writer, so the choice
/// costs an idle connection nothing (a flag made every connection's task 64
/// bytes larger, about 110 bytes of RSS per idle connection).
pub(super) struct Copying<W>(pub(super) W);

impl<W: AsyncWrite + Unpin> AsyncWrite for Copying<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

impl<W> Splice for Copying<W> {}

static IDLE: Mutex<Vec<Pipe>> = Mutex::new(Vec::new());

/// A reader or writer of a connection, which may be a plain TCP socket.
pub(super) trait Splice {
    /// The socket itself, when nothing (TLS) sits between it and the proxy.
    fn socket(&self) -> Option<&TcpStream> {
        None
    }

    /// Moves up to `len` bytes from `pipe` into this writer's socket, when
    /// it is ready for them.
    fn poll_splice_out(
        &mut self,
        cx: &mut Context<'_>,
        pipe: BorrowedFd<'_>,
        len: usize,
    ) -> Poll<io::Result<usize>> {
        match self.socket() {
            Some(tcp) => poll_splice(tcp, Interest::WRITABLE, cx, pipe, len),
            None => Poll::Ready(Err(io::ErrorKind::Unsupported.into())),
        }
    }
}

impl Splice for tokio::io::ReadHalf<BoxIo> {}
impl Splice for tokio::io::WriteHalf<BoxIo> {}

impl Splice for ReadHalf<'_> {
    fn socket(&self) -> Option<&TcpStream> {
        Some(self.as_ref())
    }
}

impl Splice for WriteHalf<'_> {
    fn socket(&self) -> Option<&TcpStream> {
        Some(self.as_ref())
    }
}

/// Whether a frame's remaining `left` bytes go from `rd` to `wr` by splice.
pub(super) fn applies(left: usize, rd: &impl Splice, wr: &impl Splice) -> bool {
    left >= SPLICE_AT_LEAST
        && rd.socket().is_some()
        && wr.socket().is_some()
        && ENABLED.load(Ordering::Relaxed)
}

/// How a spliced body ended.
pub(super) enum Spliced {
    /// All of it passed.
    Done,
    /// The kernel refused before a byte moved: copy it instead.
    Refused,
}

/// Moves the `left` bytes that remain of a frame from `rd` to `wr` through
/// a pipe, reads within the frame's clock, adding what is written to
/// `counters`.
pub(super) async fn body<R: Splice, W: Splice>(
    mut left: usize,
    rd: &mut R,
    wr: &mut W,
    clock: &mut FrameClock,
    budget: &Arc<Budget>,
    counters: [&Counter; 2],
) -> Result<Spliced, ConnError> {
    let Some(src) = rd.socket() else {
        return Ok(Spliced::Refused);
    };
    let _charge = budget.reserve(CHUNK).await;
    let pipe = match Pipe::take() {
        Ok(pipe) => pipe,
        // Out of descriptors or pipe pages for now: this frame is copied.
        Err(e) => {
            tracing::debug!(error = %e, "no pipe to splice through");
            return Ok(Spliced::Refused);
        }
    };
    let mut first = true;
    while left > 0 {
        let want = left.min(pipe.capacity);
        let read = std::future::poll_fn(|cx| {
            poll_splice(src, Interest::READABLE, cx, pipe.write.as_fd(), want)
        });
        let n = match clock.read(read).await {
            Err(ConnError::Io(e)) if first && unsupported(&e) => return refused(e),
            r => r?,
        };
        first = false;
        if n == 0 {
            return Err(ConnError::ClosedMidFrame);
        }
        let mut in_pipe = n;
        while in_pipe > 0 {
            let out = std::future::poll_fn(|cx| wr.poll_splice_out(cx, pipe.read.as_fd(), in_pipe))
                .await?;
            if out == 0 {
                return Err(ConnError::Io(io::ErrorKind::WriteZero.into()));
            }
            in_pipe -= out;
            for counter in counters {
                counter.inc_by(out as u64);
            }
        }
        left -= n;
    }
    // Empty again: another frame may use it.
    pipe.give_back();
    Ok(Spliced::Done)
}

/// The kernel's first refusal turns splicing off for the process.
fn refused(e: io::Error) -> Result<Spliced, ConnError> {
    if ENABLED.swap(false, Ordering::Relaxed) {
        tracing::warn!(error = %e, "splice(2) between sockets is refused here: frames are copied through memory instead");
    }
    Ok(Spliced::Refused)
}

/// Errors that say the kernel cannot splice these descriptors at all.
fn unsupported(e: &io::Error) -> bool {
    matches!(
        rustix::io::Errno::from_io_error(e),
        Some(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS | rustix::io::Errno::OPNOTSUPP)
    )
}

/// One `splice` between `tcp` and `pipe` once the socket is ready: into the
/// pipe when `interest` is readable, out of it when writable. The pipe is
/// never the reason to wait (it is empty before a read, and holds what a
/// write moves), so a `WouldBlock` is the socket's.
pub(super) fn poll_splice(
    tcp: &TcpStream,
    interest: Interest,
    cx: &mut Context<'_>,
    pipe: BorrowedFd<'_>,
    len: usize,
) -> Poll<io::Result<usize>> {
    let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
    loop {
        if interest.is_readable() {
            ready!(tcp.poll_read_ready(cx))?;
        } else {
            ready!(tcp.poll_write_ready(cx))?;
        }
        let moved = tcp.try_io(interest, || {
            let r = if interest.is_readable() {
                rustix::pipe::splice(tcp, None, pipe, None, len, flags)
            } else {
                rustix::pipe::splice(pipe, None, tcp, None, len, flags)
            };
            r.map_err(io::Error::from)
        });
        match moved {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return Poll::Ready(r),
        }
    }
}

/// A pipe: its read end, its write end, and how much it holds.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    capacity: usize,
}

impl Pipe {
    /// An idle pipe, or a new one.
    fn take() -> io::Result<Pipe> {
        if let Some(pipe) = IDLE.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok(pipe);
        }
        let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        let capacity = rustix::pipe::fcntl_getpipe_size(&read)?;
        Ok(Pipe {
            read,
            write,
            capacity,
        })
    }

    /// Keeps an empty pipe for reuse (or closes it when enough are kept).
    fn give_back(self) {
        let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < POOL {
            idle.push(self);
        }
    }
}

#[cfg(test)]
mod tests;
