//! A runtime per core for client connections (`run --connection-threads`).
//!
//! A connection is one task that drives both its directions, and nearly
//! every wake of it comes from its own two sockets. On tokio's
//! multi-threaded runtime each such wake still pays for what lets any
//! worker run any task: the shared run-queue bookkeeping, the handoff of
//! the I/O driver between workers, the per-poll statistics that tune the
//! global queue. Counted per request with one request in flight (callgrind,
//! docs/benchmarks.md), connections on these threads run 10% fewer
//! instructions than on the multi-threaded runtime (13,562 against 15,033).
//!
//! So the binary starts one thread per CPU, each running a current-thread
//! runtime of its own ([`start`]), and an accepted connection moves to the
//! one serving the fewest connections of its [`Kind`]. Its socket is
//! registered with that runtime's reactor, and everything the connection
//! opens (its upstream sockets, its timers) is too, so its wakes never
//! cross threads. The accept loops, the admin API and reloads stay on the
//! main runtime. What a connection shares with the rest (its cluster
//! generation, the drain, budgets, metrics) is thread-safe already; a
//! drain that wakes it from the main runtime crosses threads once.
//!
//! Without [`start`] (in-process tests, `--connection-threads 0`),
//! connections run on the runtime that accepted them, as before.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use tokio::net::TcpStream;
use tokio::runtime::{Builder, Handle};
use tokio_util::task::TaskTracker;

/// The connection runtimes, once started.
static CORES: OnceLock<Cores> = OnceLock::new();

struct Cores(Vec<Core>);

/// One connection thread's runtime and how many connections of each kind
/// it serves.
struct Core {
    handle: Handle,
    serving: [Arc<AtomicUsize>; 2],
}

/// Which connections are balanced among themselves. A client's records go
/// through its broker ports; its bootstrap connection asks for metadata and
/// then mostly idles. Counted together, two clients that each open one of
/// each would alternate bootstrap, broker, bootstrap, broker over two threads,
/// and both broker connections would share the second thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A bootstrap port, and the SNI port (whose connections' role is not
    /// known until their ClientHello is read, on the thread chosen).
    Bootstrap = 0,
    /// A broker port.
    Broker = 1,
}

/// Starts `threads` connection threads (0: none, connections stay on the
/// runtime that accepts them). Once per process; later calls change nothing.
pub(crate) fn start(threads: usize) -> std::io::Result<()> {
    if threads == 0 || CORES.get().is_some() {
        return Ok(());
    }
    let _ = CORES.set(Cores::new(threads)?);
    Ok(())
}

/// How many connection threads run (0 before [`start`]).
pub(crate) fn threads() -> usize {
    CORES.get().map_or(0, |c| c.0.len())
}

/// An accepted socket on its way to the runtime that serves it.
#[derive(Debug)]
pub(crate) enum Accepted {
    /// Registered with the runtime that accepted it, which serves it too.
    Here(TcpStream),
    /// Out of the accepting runtime's reactor, for the serving one's.
    Handed(std::net::TcpStream),
}

impl Accepted {
    /// The socket, registered with the runtime this runs on (tokio binds a
    /// socket to the reactor it is made under).
    pub(crate) fn register(self) -> std::io::Result<TcpStream> {
        match self {
            Accepted::Here(tcp) => Ok(tcp),
            Accepted::Handed(socket) => TcpStream::from_std(socket),
        }
    }
}

/// Runs `serve` on `tcp`, tracked by `tracker`: on the connection thread
/// serving the fewest connections of its `kind` (of all, between equals),
/// or here when there are none. `serve`
/// must [`Accepted::register`] the socket where it runs.
pub(crate) fn spawn<F, Fut>(tracker: &TaskTracker, tcp: TcpStream, kind: Kind, serve: F)
where
    F: FnOnce(Accepted) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    match CORES.get() {
        Some(cores) => cores.spawn(tracker, tcp, kind, serve),
        None => {
            tracker.spawn(serve(Accepted::Here(tcp)));
        }
    }
}

impl Cores {
    /// `threads` (at least one) threads, each running a current-thread
    /// runtime until the process ends.
    fn new(threads: usize) -> std::io::Result<Cores> {
        let mut cores = Vec::with_capacity(threads.max(1));
        for i in 0..threads.max(1) {
            let runtime = Builder::new_current_thread()
                .enable_all()
                .thread_name("sluice-conn-blocking")
                .build()?;
            let handle = runtime.handle().clone();
            std::thread::Builder::new()
                .name(format!("sluice-conn-{i}"))
                .spawn(move || runtime.block_on(std::future::pending::<()>()))?;
            cores.push(Core {
                handle,
                serving: [Arc::default(), Arc::default()],
            });
        }
        Ok(Cores(cores))
    }

    /// Runs `serve` on `tcp` on the thread serving the fewest connections
    /// of its kind.
    fn spawn<F, Fut>(&self, tracker: &TaskTracker, tcp: TcpStream, kind: Kind, serve: F)
    where
        F: FnOnce(Accepted) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let core = self.least_busy(kind);
        let socket = match tcp.into_std() {
            Ok(socket) => socket,
            Err(e) => {
                tracing::warn!(error = %e, "connection closed: cannot hand it to a connection thread");
                return;
            }
        };
        // Made here, polled there. Not an `async` block around it: that
        // would keep the future twice, as its capture and as what it
        // awaits (an idle connection's task is mostly this future).
        let counted = Counted {
            connection: serve(Accepted::Handed(socket)),
            _serving: Serving::new(&core.serving[kind as usize]),
        };
        tracker.spawn_on(counted, &core.handle);
    }

    fn least_busy(&self, kind: Kind) -> &Core {
        let load = |core: &Core| {
            let n = |k: usize| core.serving[k].load(Ordering::Relaxed);
            (n(kind as usize), n(0) + n(1))
        };
        self.0
            .iter()
            .min_by_key(|core| load(core))
            .unwrap_or(&self.0[0])
    }
}

pin_project_lite::pin_project! {
    /// A connection's future, counted on its thread until it ends.
    struct Counted<F> {
        #[pin]
        connection: F,
        _serving: Serving,
    }
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().connection.poll(cx)
    }
}

/// One connection counted on its thread while it lives.
struct Serving(Arc<AtomicUsize>);

impl Serving {
    fn new(count: &Arc<AtomicUsize>) -> Serving {
        count.fetch_add(1, Ordering::Relaxed);
        Serving(Arc::clone(count))
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
