//! One client connection, proxied to one upstream broker.
//!
//! Two directions run side by side (`requests`, `responses`). Requests are
//! split into frames and their headers read; filters may answer a request
//! themselves; every request that expects a response takes an in-flight
//! slot *before* any of it is written upstream, and at most
//! [`MAX_IN_FLIGHT`] slots exist per connection, those the proxy answers
//! itself included (a large answer of its own takes a slot per 256 bytes):
//! past that the proxy stops reading from the client.
//! Responses are matched against the slots in order: those that carry
//! broker addresses (and ApiVersions) are held whole and rewritten,
//! everything else streams through. A protocol error closes this connection
//! only. How bytes are held is `buffer`'s business; how many, `budget`'s.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_rustls::{Accept, StartHandshake};
use tracing::Instrument;

use super::cluster::ClusterRuntime;
use super::inflight;
use super::patience::WriteStalled;
use super::requests::forward_requests;
use super::responses::forward_responses;
use super::splice::Splice;
use super::upstream::{self, BoxIo, Stream, UpstreamError};
use crate::kafka::frame::{FrameError, RequestHeader};
use crate::kafka::rewrite::RewriteError;

/// Requests that may await their response at once on one connection,
/// answered by the upstream or by the proxy; more stop the proxy reading
/// from the client until responses are written.
pub(super) const MAX_IN_FLIGHT: usize = 1024;
/// How long a client's TLS handshake may take (on the SNI port, the
/// ClientHello and the rest each).
pub(super) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A client connection as it reaches [`serve`].
#[derive(Debug)]
pub(crate) enum Incoming {
    /// Just accepted on a port of its own cluster.
    Tcp(TcpStream),
    /// Accepted on the shared SNI port, its ClientHello read (which chose
    /// the cluster); the handshake goes on with the cluster's certificate.
    Sni(Box<StartHandshake<TcpStream>>),
}

/// What a listener port leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The bootstrap port: any upstream bootstrap server.
    Bootstrap,
    /// A broker port: that upstream node.
    Broker(i32),
}

/// An in-flight slot, in request order; the permit it carries is returned
/// when the response has been passed on to the client.
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) answer: Answer,
    pub(super) _permit: OwnedSemaphorePermit,
}

/// Who answers a request.
#[derive(Debug)]
pub(super) enum Answer {
    /// The upstream; the header says how to treat the response.
    Upstream(RequestHeader),
    /// The proxy did; these bytes (charged to the budget) go to the client
    /// in turn.
    Local(Bytes),
}

/// The time a client has to send the rest of a frame it started: only time
/// spent waiting for the client's bytes counts (not waits for the upstream
/// or for memory).
#[derive(Debug)]
pub(super) struct FrameClock {
    left: Option<Duration>,
    limit: Duration,
}

impl FrameClock {
    /// A frame from a client: `limits.frameTimeout`.
    pub(super) fn new(limit: Duration) -> Self {
        FrameClock {
            left: Some(limit),
            limit,
        }
    }

    /// A frame from the upstream: no limit.
    pub(super) fn unlimited() -> Self {
        FrameClock {
            left: None,
            limit: Duration::MAX,
        }
    }

    /// Runs one read of the frame against what is left of its time.
    pub(super) async fn read<F>(&mut self, read: F) -> Result<usize, ConnError>
    where
        F: Future<Output = std::io::Result<usize>>,
    {
        let Some(left) = self.left else {
            return Ok(read.await?);
        };
        let started = Instant::now();
        let result = tokio::time::timeout(left, read).await;
        self.left = Some(left.saturating_sub(started.elapsed()));
        result
            .map_err(|_| ConnError::FrameTimeout(self.limit))?
            .map_err(ConnError::Io)
    }
}

/// Why a connection ended early.
#[derive(Debug, thiserror::Error)]
pub(super) enum ConnError {
    #[error("{0}")]
    Io(std::io::Error),
    #[error("{0}")]
    Frame(#[from] FrameError),
    #[error("a started frame did not arrive whole within {0:?}")]
    FrameTimeout(Duration),
    #[error("{0}")]
    WriteTimeout(WriteStalled),
    #[error("{0}")]
    Rewrite(#[from] RewriteError),
    #[error("{0}")]
    Upstream(#[from] UpstreamError),
    #[error("client tls handshake: {0}")]
    Tls(std::io::Error),
    #[error("upstream answered correlation id {got}, expected {expected}")]
    Mismatch { expected: i32, got: i32 },
    #[error("upstream sent a response no request is waiting for")]
    Unsolicited,
    #[error("upstream closed the connection with {0} requests in flight")]
    UpstreamClosed(usize),
    #[error("the peer closed the connection in the middle of a frame")]
    ClosedMidFrame,
    #[error("closed at the drain deadline")]
    Forced,
}

impl ConnError {
    /// Label for `sluice_connections_closed_on_error_total`.
    fn reason(&self) -> &'static str {
        match self {
            ConnError::Io(_) | ConnError::ClosedMidFrame => "io",
            ConnError::Frame(FrameError::TooLarge { .. }) => "too_large",
            ConnError::Frame(_) => "malformed",
            ConnError::FrameTimeout(_) => "frame_timeout",
            ConnError::WriteTimeout(_) => "write_timeout",
            ConnError::Rewrite(_) => "rewrite",
            ConnError::Upstream(e) if e.is_auth() => "upstream_auth",
            ConnError::Upstream(_) => "upstream",
            ConnError::Tls(_) => "tls",
            ConnError::Mismatch { .. } | ConnError::Unsolicited | ConnError::UpstreamClosed(_) => {
                "upstream_protocol"
            }
            ConnError::Forced => "drain_deadline",
        }
    }
}

impl From<std::io::Error> for ConnError {
    fn from(e: std::io::Error) -> Self {
        match e.downcast::<WriteStalled>() {
            Ok(stalled) => ConnError::WriteTimeout(stalled),
            Err(e) => ConnError::Io(e),
        }
    }
}

/// Serves one accepted client connection to its end.
pub(crate) async fn serve(
    incoming: Incoming,
    peer: SocketAddr,
    cluster: Arc<ClusterRuntime>,
    role: Role,
) {
    let Some(_admitted) = cluster.admit() else {
        tracing::debug!(cluster = %cluster.name(), %peer, "connection refused: maxConnections reached");
        return;
    };
    // A span per connection only at debug level: at info, its slot and
    // formatted fields would be most of an idle connection's memory. The
    // events that matter at info name the connection themselves.
    let span = tracing::debug_span!(
        "conn",
        cluster = %cluster.name(),
        generation = cluster.generation,
        %peer,
        role = ?role,
    );
    async {
        let result = tokio::select! {
            r = run(incoming, &cluster, role) => r,
            () = cluster.force.cancelled() => Err(ConnError::Forced),
        };
        if cluster.drain.is_cancelled() {
            let forced = matches!(result, Err(ConnError::Forced));
            cluster.metrics.drained(forced);
        }
        let (name, generation) = (cluster.name(), cluster.generation);
        match result {
            Ok(()) => tracing::debug!("connection closed"),
            Err(ConnError::Forced) => {
                tracing::info!(cluster = %name, generation, %peer, role = ?role, "connection closed at the drain deadline with requests in flight")
            }
            Err(e) => {
                cluster.metrics.closed_on_error(e.reason());
                match e {
                    ConnError::Io(_) | ConnError::ClosedMidFrame => {
                        tracing::debug!(error = %e, "connection ended")
                    }
                    ConnError::Upstream(ref u) if u.is_auth() => {
                        tracing::warn!(cluster = %name, generation, %peer, role = ?role, error = %e, "connection closed: the upstream refused the proxy's own lookup")
                    }
                    ConnError::Upstream(_) | ConnError::Tls(_) | ConnError::WriteTimeout(_) => {
                        tracing::info!(cluster = %name, generation, %peer, role = ?role, error = %e, "connection closed")
                    }
                    _ => tracing::warn!(cluster = %name, generation, %peer, role = ?role, error = %e, "connection closed on protocol error"),
                }
            }
        }
    }
    .instrument(span)
    .await;
}

async fn run(incoming: Incoming, cluster: &ClusterRuntime, role: Role) -> Result<(), ConnError> {
    // The handshake and the upstream connect are boxed: their state lives
    // only while they run, not in the connection's task for its whole life.
    let client = match (incoming, cluster.acceptor()) {
        (Incoming::Tcp(tcp), Some(acceptor)) => {
            let _ = tcp.set_nodelay(true);
            Stream::Wrapped(handshake(Box::pin(acceptor.accept(tcp))).await?)
        }
        (Incoming::Tcp(tcp), None) => {
            let _ = tcp.set_nodelay(true);
            Stream::Plain(tcp)
        }
        (Incoming::Sni(start), Some(acceptor)) => {
            let _ = start.io.set_nodelay(true);
            let config = Arc::clone(acceptor.config());
            Stream::Wrapped(handshake(Box::pin((*start).into_stream(config))).await?)
        }
        // Validation requires TLS with SNI routing.
        (Incoming::Sni(_), None) => {
            return Err(ConnError::Tls(std::io::Error::other(
                "no TLS configuration for an SNI-routed cluster",
            )));
        }
    };
    let upstream = Box::pin(connect_upstream(cluster, role)).await?;
    match (client, upstream) {
        // Plaintext on both sides: the sockets' own halves, through which
        // the bodies of streamed frames are spliced.
        (Stream::Plain(mut client), Stream::Plain(mut upstream)) => {
            let (client_rd, client_wr) = client.split();
            let (upstream_rd, upstream_wr) = upstream.split();
            pipe(client_rd, client_wr, upstream_rd, upstream_wr, cluster).await
        }
        (client, upstream) => {
            let (client_rd, client_wr) = tokio::io::split(client.boxed());
            let (upstream_rd, upstream_wr) = tokio::io::split(upstream.boxed());
            pipe(client_rd, client_wr, upstream_rd, upstream_wr, cluster).await
        }
    }
}

/// Finishes a client's TLS handshake, within [`HANDSHAKE_TIMEOUT`].
async fn handshake(accept: Pin<Box<Accept<TcpStream>>>) -> Result<BoxIo, ConnError> {
    let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, accept)
        .await
        .map_err(|_| ConnError::Tls(std::io::ErrorKind::TimedOut.into()))?
        .map_err(ConnError::Tls)?;
    Ok(Box::new(tls))
}

async fn connect_upstream(cluster: &ClusterRuntime, role: Role) -> Result<Stream, ConnError> {
    Ok(match role {
        Role::Bootstrap => upstream::connect_bootstrap(cluster).await?.0,
        Role::Broker(id) => {
            let addr = upstream::node_address(cluster, id).await?;
            upstream::connect(cluster, &addr.host, addr.port).await?
        }
    })
}

/// Runs both directions of a connection to their end.
async fn pipe<CR, CW, UR, UW>(
    client_rd: CR,
    client_wr: CW,
    upstream_rd: UR,
    upstream_wr: UW,
    cluster: &ClusterRuntime,
) -> Result<(), ConnError>
where
    CR: AsyncRead + Splice + Unpin,
    CW: AsyncWrite + Splice + Unpin,
    UR: AsyncRead + Splice + Unpin,
    UW: AsyncWrite + Splice + Unpin,
{
    // Bounded by the permits its slots carry.
    let (tx, rx) = inflight::queue();
    let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let requests = forward_requests(client_rd, upstream_wr, tx, permits, cluster);
    let responses = forward_responses(upstream_rd, client_wr, rx, cluster);
    tokio::pin!(requests, responses);
    tokio::select! {
        r = &mut requests => {
            r?;
            // The client is done sending: answer what is still in flight.
            responses.await
        }
        r = &mut responses => r,
    }
}

/// A random delay in `[0, window)`, different for each connection.
pub(super) fn jitter(window: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return Duration::ZERO;
    }
    // RandomState is seeded randomly per instance: enough randomness here.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(ms);
    Duration::from_millis(h.finish() % ms)
}
