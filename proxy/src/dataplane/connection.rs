//! One client connection, proxied to one upstream broker.
//!
//! Two directions run side by side. Requests are split into frames and their
//! headers read; filters may answer a request themselves; every request that
//! expects a response takes a slot in an in-flight queue *before* it is
//! written upstream. Responses are matched against that queue in order:
//! those that carry broker addresses (and ApiVersions) are decoded and
//! rewritten, everything else is forwarded as bytes. A protocol error closes
//! this connection only.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::Instrument;

use super::buffer::{READ_CHUNK, reserve_for_request, reserve_for_response};
use super::cluster::ClusterRuntime;
use super::upstream::{self, BoxIo, UpstreamError};
use crate::filter::{RequestHead, Verdict};
use crate::kafka::api_name;
use crate::kafka::deny::deny_response;
use crate::kafka::frame::{
    FrameError, RequestHeader, expects_response, request_frame_len, request_header,
    response_correlation_id, response_frame_len,
};
use crate::kafka::rewrite::{RewriteError, rewrite_response, rewrites};
use crate::kafka::versions::cap_api_versions;

/// Requests that may await their response at once on one connection; more
/// stop the proxy reading from the client until responses drain.
const MAX_IN_FLIGHT: usize = 1024;
/// How long a client's TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Kafka's ApiVersions key.
const API_VERSIONS: i16 = 18;

/// What a listener port leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The bootstrap port: any upstream bootstrap server.
    Bootstrap,
    /// A broker port: that upstream node.
    Broker(i32),
}

/// A slot in the in-flight queue, in request order.
#[derive(Debug)]
enum InFlight {
    /// The upstream answers; the header says how to treat the response.
    Upstream(RequestHeader),
    /// The proxy answered itself; these bytes go to the client in turn.
    Local(Bytes),
}

/// Why a connection ended early.
#[derive(Debug, thiserror::Error)]
enum ConnError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Frame(#[from] FrameError),
    #[error("a started frame did not arrive whole within {0:?}")]
    FrameTimeout(Duration),
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
    #[error("closed at the drain deadline")]
    Forced,
}

impl ConnError {
    /// Label for `sluice_connections_closed_on_error_total`.
    fn reason(&self) -> &'static str {
        match self {
            ConnError::Io(_) => "io",
            ConnError::Frame(FrameError::TooLarge { .. }) => "too_large",
            ConnError::Frame(_) => "malformed",
            ConnError::FrameTimeout(_) => "frame_timeout",
            ConnError::Rewrite(_) => "rewrite",
            ConnError::Upstream(_) => "upstream",
            ConnError::Tls(_) => "tls",
            ConnError::Mismatch { .. } | ConnError::Unsolicited | ConnError::UpstreamClosed(_) => {
                "upstream_protocol"
            }
            ConnError::Forced => "drain_deadline",
        }
    }
}

/// Serves one accepted client connection to its end.
pub(crate) async fn serve(
    tcp: TcpStream,
    peer: SocketAddr,
    cluster: Arc<ClusterRuntime>,
    role: Role,
) {
    let Some(_admitted) = cluster.admit() else {
        tracing::debug!(cluster = %cluster.name(), %peer, "connection refused: maxConnections reached");
        return;
    };
    let span = tracing::info_span!(
        "conn",
        cluster = %cluster.name(),
        generation = cluster.generation,
        %peer,
        role = ?role,
    );
    async {
        let result = tokio::select! {
            r = run(tcp, &cluster, role) => r,
            () = cluster.force.cancelled() => Err(ConnError::Forced),
        };
        if cluster.drain.is_cancelled() {
            let forced = matches!(result, Err(ConnError::Forced));
            cluster.metrics.drained(forced);
        }
        match result {
            Ok(()) => tracing::debug!("connection closed"),
            Err(ConnError::Forced) => {
                tracing::info!("connection closed at the drain deadline with requests in flight")
            }
            Err(e) => {
                cluster.metrics.closed_on_error(e.reason());
                match e {
                    ConnError::Io(_) => tracing::debug!(error = %e, "connection ended"),
                    ConnError::Upstream(_) | ConnError::Tls(_) => {
                        tracing::info!(error = %e, "connection closed")
                    }
                    _ => tracing::warn!(error = %e, "connection closed on protocol error"),
                }
            }
        }
    }
    .instrument(span)
    .await;
}

async fn run(tcp: TcpStream, cluster: &ClusterRuntime, role: Role) -> Result<(), ConnError> {
    let _ = tcp.set_nodelay(true);
    let client: BoxIo = match &cluster.acceptor {
        Some(acceptor) => {
            let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp))
                .await
                .map_err(|_| ConnError::Tls(std::io::ErrorKind::TimedOut.into()))?
                .map_err(ConnError::Tls)?;
            Box::new(tls)
        }
        None => Box::new(tcp),
    };
    let upstream = match role {
        Role::Bootstrap => upstream::connect_bootstrap(cluster).await?.0,
        Role::Broker(id) => {
            let addr = upstream::node_address(cluster, id).await?;
            upstream::connect(cluster, &addr.host, addr.port).await?
        }
    };
    pipe(client, upstream, cluster).await
}

async fn pipe(client: BoxIo, upstream: BoxIo, cluster: &ClusterRuntime) -> Result<(), ConnError> {
    let (client_rd, client_wr) = tokio::io::split(client);
    let (upstream_rd, upstream_wr) = tokio::io::split(upstream);
    let (tx, rx) = mpsc::channel(MAX_IN_FLIGHT);
    let requests = forward_requests(client_rd, upstream_wr, tx, cluster);
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

/// Client to upstream: frames, filters, in-flight slots.
async fn forward_requests(
    mut rd: ReadHalf<BoxIo>,
    mut wr: WriteHalf<BoxIo>,
    tx: mpsc::Sender<InFlight>,
    cluster: &ClusterRuntime,
) -> Result<(), ConnError> {
    let limits = cluster.config.limits;
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut partial_since: Option<Instant> = None;
    // Once the generation drains, this connection stops taking requests at
    // its own moment within the spread window; what is in flight is still
    // answered by the response side.
    let stop = async {
        cluster.drain.cancelled().await;
        tokio::time::sleep(jitter(cluster.drain_spread())).await;
    };
    tokio::pin!(stop);
    loop {
        let read = async {
            let read = rd.read_buf(&mut buf);
            match partial_since {
                None => Ok(read.await?),
                Some(start) => tokio::time::timeout_at(start + limits.frame_timeout, read)
                    .await
                    .map_err(|_| ConnError::FrameTimeout(limits.frame_timeout))?
                    .map_err(ConnError::Io),
            }
        };
        let n = tokio::select! {
            () = &mut stop => return Ok(()),
            n = read => n?,
        };
        if n == 0 {
            return Ok(());
        }
        cluster.metrics.bytes_to_upstream.inc_by(n as u64);
        let mut forward = 0;
        while let Some(len) = request_frame_len(&buf[forward..], limits.max_frame_bytes)? {
            let frame = &buf[forward..forward + len];
            let header = request_header(frame)?;
            cluster.metrics.request(api_name(header.api_key));
            match decide(cluster, &header) {
                Verdict::Forward => {
                    if expects_response(frame, &header) {
                        send(&tx, InFlight::Upstream(header)).await?;
                    }
                    forward += len;
                }
                Verdict::Deny { error_code } => {
                    if forward > 0 {
                        wr.write_all(&buf.split_to(forward)).await?;
                        forward = 0;
                    }
                    let frame = buf.split_to(len).freeze();
                    let response = deny_response(&frame, &header, error_code)?;
                    cluster.metrics.denied(api_name(header.api_key));
                    send(&tx, InFlight::Local(response)).await?;
                }
            }
        }
        if forward > 0 {
            wr.write_all(&buf.split_to(forward)).await?;
        }
        wr.flush().await?;
        partial_since = if buf.is_empty() {
            None
        } else {
            partial_since.or_else(|| Some(Instant::now()))
        };
        reserve_for_request(&mut buf);
    }
}

/// A random delay in `[0, window)`, different for each connection.
fn jitter(window: Duration) -> Duration {
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

fn decide(cluster: &ClusterRuntime, header: &RequestHeader) -> Verdict {
    let head = RequestHead {
        api_key: header.api_key,
        api_version: header.api_version,
    };
    cluster
        .filters
        .iter()
        .map(|f| f.on_request(&head))
        .find(|v| *v != Verdict::Forward)
        .unwrap_or(Verdict::Forward)
}

async fn send(tx: &mpsc::Sender<InFlight>, slot: InFlight) -> Result<(), ConnError> {
    // The response side only goes away when the connection is ending.
    tx.send(slot)
        .await
        .map_err(|_| ConnError::Io(std::io::ErrorKind::BrokenPipe.into()))
}

/// Upstream to client: responses matched to the in-flight queue, in order.
async fn forward_responses(
    mut rd: ReadHalf<BoxIo>,
    wr: WriteHalf<BoxIo>,
    mut rx: mpsc::Receiver<InFlight>,
    cluster: &ClusterRuntime,
) -> Result<(), ConnError> {
    let max = cluster.config.limits.max_frame_bytes;
    let mut wr = BufWriter::with_capacity(READ_CHUNK, wr);
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut queue: VecDeque<InFlight> = VecDeque::new();
    let mut open = true;
    loop {
        let mut wrote = false;
        while let Some(front) = queue.front() {
            let out = match front {
                InFlight::Local(bytes) => bytes.clone(),
                InFlight::Upstream(header) => {
                    let Some(len) = response_frame_len(&buf, max)? else {
                        break;
                    };
                    let frame = buf.split_to(len).freeze();
                    let got = response_correlation_id(&frame)?;
                    if got != header.correlation_id {
                        return Err(ConnError::Mismatch {
                            expected: header.correlation_id,
                            got,
                        });
                    }
                    transform(&frame, header, cluster)?
                }
            };
            queue.pop_front();
            cluster.metrics.bytes_to_client.inc_by(out.len() as u64);
            wr.write_all(&out).await?;
            wrote = true;
        }
        if wrote {
            wr.flush().await?;
        }
        if !open && queue.is_empty() {
            return Ok(());
        }
        if queue.is_empty() && response_frame_len(&buf, max)?.is_some() {
            // Slots are queued before their requests are sent, so a waiting
            // response's slot is already in the channel, or it has none.
            while let Ok(slot) = rx.try_recv() {
                queue.push_back(slot);
            }
            if queue.is_empty() {
                return Err(ConnError::Unsolicited);
            }
            continue;
        }
        tokio::select! {
            slot = rx.recv(), if open => match slot {
                Some(slot) => {
                    queue.push_back(slot);
                    while let Ok(slot) = rx.try_recv() {
                        queue.push_back(slot);
                    }
                }
                None => open = false,
            },
            n = rd.read_buf(&mut buf) => {
                if n? == 0 {
                    let waiting = queue.iter().filter(|s| matches!(s, InFlight::Upstream(_))).count();
                    return if waiting == 0 { Ok(()) } else { Err(ConnError::UpstreamClosed(waiting)) };
                }
                reserve_for_response(&mut buf, max);
            }
        }
    }
}

/// Rewrites the responses that need it; the rest pass as they are.
fn transform(
    frame: &Bytes,
    header: &RequestHeader,
    cluster: &ClusterRuntime,
) -> Result<Bytes, ConnError> {
    if header.api_key == API_VERSIONS {
        return Ok(cap_api_versions(frame, header.api_version, &|k| {
            cluster.decodes(k)
        })?);
    }
    if !rewrites(header.api_key, header.api_version) {
        return Ok(frame.clone());
    }
    let rewritten = rewrite_response(frame, header, &cluster.advertised)?;
    if !rewritten.changed {
        return Ok(rewritten.frame);
    }
    cluster.learn(&rewritten.learned);
    if !rewritten.unmapped.is_empty() {
        cluster.unmapped(&rewritten.unmapped);
    }
    cluster.metrics.rewrite(api_name(header.api_key));
    Ok(rewritten.frame)
}
