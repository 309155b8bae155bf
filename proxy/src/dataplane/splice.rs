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

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use prometheus_client::metrics::counter::Counter;
use rustix::pipe::{PipeFlags, SpliceFlags};
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::net::tcp::{ReadHalf, WriteHalf};

use super::direction::{CHUNK, ConnError, FrameClock};
use super::stream::BoxIo;
use crate::budget::Budget;

/// Idle pipes kept for the next frames (two descriptors each).
const POOL: usize = 64;
/// Below this many bytes left of a frame, copying through the chunk costs
/// less than the pipe's own system calls.
pub(super) const SPLICE_AT_LEAST: usize = 16 * 1024;

/// Whether splicing still works here; cleared at the first refusal.
static ENABLED: AtomicBool = AtomicBool::new(true);
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
