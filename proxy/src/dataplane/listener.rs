//! Listening sockets, keyed by address. A listener is bound first and routed
//! later: its accept loop asks, for every connection, which cluster
//! generation the port leads to now, so a reload can hand an open socket to a
//! new generation without closing it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;

use super::cluster::ClusterRuntime;
use super::connection::{self, Role};

/// Pending connections the kernel queues per listener.
const BACKLOG: u32 = 1024;

/// Where a port's connections go.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    /// The generation serving the port.
    pub cluster: Arc<ClusterRuntime>,
    /// Bootstrap or which broker.
    pub role: Role,
}

/// Binds `addr` (with `SO_REUSEADDR`, so a port in TIME_WAIT can be taken
/// again at once) without accepting yet.
pub(crate) fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// A bound socket with its accept loop.
#[derive(Debug)]
pub(crate) struct Listener {
    addr: SocketAddr,
    route: watch::Sender<Option<Route>>,
    /// Stops the accept loop when dropped.
    stop: DropGuard,
    closed: mpsc::Receiver<()>,
}

/// A listener being closed: its accept loop owns the socket, so the port is
/// free once the loop has ended.
#[derive(Debug)]
pub(crate) struct Closing {
    addr: SocketAddr,
    closed: mpsc::Receiver<()>,
}

impl Closing {
    /// Blocks (on a blocking thread, not a runtime worker) until the socket
    /// is closed, for at most `timeout`; false if it was not closed in time.
    pub(crate) fn wait(self, timeout: Duration) -> bool {
        // A loop dropped without sending (runtime shutting down) dropped the
        // socket with it: closed too.
        !matches!(
            self.closed.recv_timeout(timeout),
            Err(mpsc::RecvTimeoutError::Timeout)
        )
    }

    /// The address being released.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Listener {
    /// Starts accepting on a bound socket (the accept loop runs on
    /// `tracker`); connections follow `route` and run on their generation's
    /// tracker, so a drain can wait for exactly its own.
    pub(crate) fn start(socket: TcpListener, route: Route, tracker: &TaskTracker) -> Self {
        let addr = socket
            .local_addr()
            .unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
        let (tx, rx) = watch::channel(Some(route));
        let stop = CancellationToken::new();
        let (closed_tx, closed) = mpsc::sync_channel(1);
        let accepting = accept_loop(socket, rx, stop.clone());
        tracker.spawn(async move {
            accepting.await;
            // The socket was dropped with the loop: the port is free.
            let _ = closed_tx.send(());
        });
        Listener {
            addr,
            route: tx,
            stop: stop.drop_guard(),
            closed,
        }
    }

    /// Sends new connections to another generation; open ones are untouched.
    pub(crate) fn set_route(&self, route: Route) {
        self.route.send_replace(Some(route));
    }

    /// Stops accepting and closes the socket; open connections are untouched.
    /// Wait on the result where the port must be free again before going on.
    pub(crate) fn close(self) -> Closing {
        let Listener {
            addr, stop, closed, ..
        } = self;
        drop(stop);
        Closing { addr, closed }
    }
}

async fn accept_loop(
    socket: TcpListener,
    route: watch::Receiver<Option<Route>>,
    stop: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            r = socket.accept() => r,
        };
        match accepted {
            Ok((tcp, peer)) => {
                let current = route.borrow().clone();
                match current {
                    Some(r) => {
                        let connections = r.cluster.connections.clone();
                        connections.spawn(connection::serve(tcp, peer, r.cluster, r.role));
                    }
                    None => drop(tcp),
                }
            }
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
