//! Listening sockets, keyed by address. A listener is bound first and routed
//! later: its accept loop asks, for every connection, which cluster
//! generation the port leads to now, so a reload can hand an open socket to a
//! new generation without closing it. A port-per-broker listener leads to
//! one generation and role; an SNI listener to a table of server names
//! (see [`super::sni`]), swapped whole when SNI clusters change. While the
//! data plane is [`Hold`]ed (`run --hold`), every connection is closed as
//! soon as it is accepted: nothing is served, yet every port stays bound.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;

use super::connection::{self, Incoming, Role};
use super::cores;
use super::own;
pub(crate) use super::routes::{Route, Routes};
use super::sni;
use crate::metrics::SniUnrouted;

/// Pending connections the kernel queues per listener.
const BACKLOG: u32 = 1024;

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

/// Whether the data plane is held (`run --hold`): shared by every accept
/// loop, released once for all of them. A held proxy keeps its ports (a
/// conflict still fails at startup, and no other process can take them) but
/// closes each connection at once, so no client is served the version it
/// holds before a watcher has chosen which version to serve.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hold(Arc<AtomicBool>);

impl Hold {
    /// A hold, held or not from the start.
    pub(crate) fn new(held: bool) -> Hold {
        Hold(Arc::new(AtomicBool::new(held)))
    }

    /// Whether connections are closed as they come.
    pub(crate) fn is_held(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Serve from now on; whether it was held until now (once true).
    pub(crate) fn release(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
}

/// A bound socket with its accept loop.
#[derive(Debug)]
pub(crate) struct Listener {
    addr: SocketAddr,
    routes: watch::Sender<Routes>,
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
    /// `tracker`, and so do SNI connections until their server name is
    /// read); connections follow `routes` and run on their generation's
    /// tracker, so a drain can wait for exactly its own. Connections no
    /// server name routes are counted in `unrouted`; while `hold` is held,
    /// connections are closed as they are accepted.
    pub(crate) fn start(
        socket: TcpListener,
        routes: Routes,
        tracker: &TaskTracker,
        unrouted: SniUnrouted,
        hold: Hold,
    ) -> Self {
        let addr = socket
            .local_addr()
            .unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
        let (tx, rx) = watch::channel(routes);
        let stop = CancellationToken::new();
        let (closed_tx, closed) = mpsc::sync_channel(1);
        let accepting = accept_loop(socket, rx, stop.clone(), tracker.clone(), unrouted, hold);
        // Known as the proxy's own from now until the loop drops the socket.
        let own = own::Listening::register(addr);
        tracker.spawn(async move {
            let _own = own;
            accepting.await;
            // The socket was dropped with the loop: the port is free.
            let _ = closed_tx.send(());
        });
        Listener {
            addr,
            routes: tx,
            stop: stop.drop_guard(),
            closed,
        }
    }

    /// Sends new connections elsewhere: another generation, or (SNI) a
    /// new table of names; open connections are untouched.
    pub(crate) fn set_routes(&self, routes: Routes) {
        self.routes.send_replace(routes);
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
    routes: watch::Receiver<Routes>,
    stop: CancellationToken,
    tracker: TaskTracker,
    unrouted: SniUnrouted,
    hold: Hold,
) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            r = socket.accept() => r,
        };
        match accepted {
            Ok((tcp, peer)) if hold.is_held() => {
                tracing::debug!(%peer, "connection closed: the data plane is held");
                drop(tcp);
            }
            Ok((tcp, peer)) => {
                let current = routes.borrow().clone();
                match current {
                    Routes::Port(r) => {
                        let connections = r.cluster.connections.clone();
                        let kind = match r.role {
                            Role::Bootstrap => cores::Kind::Bootstrap,
                            Role::Broker(_) => cores::Kind::Broker,
                        };
                        cores::spawn(&connections, tcp, kind, move |accepted| {
                            connection::serve(Incoming::Tcp(accepted), peer, r.cluster, r.role)
                        });
                    }
                    Routes::Sni(_) => {
                        let (routes, unrouted) = (routes.clone(), unrouted.clone());
                        cores::spawn(&tracker, tcp, cores::Kind::Bootstrap, move |accepted| {
                            sni::serve(accepted, peer, routes, unrouted)
                        });
                    }
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
