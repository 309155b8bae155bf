//! Client to upstream: each request's header is read, the filters decide,
//! and a request that gets an answer takes an in-flight slot before any of
//! it goes upstream. A forwarded request streams through the connection's
//! chunk; a denied one is held whole (to decode it), answered, and freed.
//! Waiting for a slot, like waiting for memory, is not reading: the client
//! is throttled by its own TCP window, nothing queues behind it.

use rustls_pki_types::CertificateDer;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use sluice_kafka::frame::{
    RequestHeader, expects_response, expects_response_from, request_client_id, request_header,
};
use sluice_kafka::versions::{Served, served};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{Answer, CHUNK, ConnError, FrameClock, Slot};
use super::inflight::Sender;
use super::inspect::Inspection;
use super::live::Filters;
use super::metered::Metered;
use super::splice::Splice;
use super::{tenant, throttle};
use crate::config::filter::QuotaSpec;
use crate::filter::{RequestHead, Verdict};
use crate::metrics::Judged;

mod dispatch;
use dispatch::Shared;
mod deny;
mod inspect;
mod read;
use read::{between_frames, drained, read_head, still_served};
mod reauth;
pub(super) use reauth::SaslSession;
mod police;
mod sessions;
pub(super) use sessions::learn_session;
mod versions;

/// Bytes of an answer the proxy makes that take one in-flight slot: its
/// answers waiting for a client that does not read are bounded in bytes
/// too (`MAX_IN_FLIGHT` of them, 256 KiB, per connection).
const ANSWER_BYTES_PER_SLOT: usize = 256;

/// The client a connection serves: its cluster, its address, its
/// principal.
#[derive(Debug, Clone, Copy)]
pub(super) struct Who<'a> {
    pub(super) cluster: &'a ClusterRuntime,
    pub(super) peer: IpAddr,
    /// Set before the first request, or (inspection) once the broker
    /// authenticated the client.
    pub(super) principal: &'a OnceLock<Arc<str>>,
    /// The client certificate its principal was mapped from (mTLS).
    pub(super) chain: Option<&'a [CertificateDer<'static>]>,
    /// The `authentication` epoch its principal was found under.
    pub(super) epoch: u64,
    pub(super) inspection: Option<&'a Inspection>,
    /// Authenticated by the proxy (`authentication.sasl`): when its
    /// session ends (`None` inside: never).
    pub(super) terminated: Option<Option<tokio::time::Instant>>,
}

/// Client to upstream, until the client stops sending or the generation
/// drains.
pub(super) async fn forward_requests<R, W>(
    mut rd: R,
    mut wr: W,
    tx: Sender<Slot>,
    permits: Arc<Semaphore>,
    who: Who<'_>,
) -> Result<(), ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let (cluster, peer, identity, chain) = (who.cluster, who.peer, who.principal, who.chain);
    let (inspection, mut epoch) = (who.inspection, who.epoch);
    // Boxed: only terminated connections have one.
    let mut session = (who.terminated).map(|expires| Box::new(SaslSession::until(expires)));
    let mut buf = FrameBuf::new(
        cluster.budget(),
        cluster.metrics.bytes_to_upstream.clone(),
        cluster.metrics.spliced_to_upstream.clone(),
    );
    let stop = drained(cluster);
    tokio::pin!(stop);
    loop {
        if buf.unread().is_empty() && !between_frames(&mut buf, &mut rd, &mut wr, &mut stop).await?
        {
            return Ok(());
        }
        let principal = identity.get();
        still_served(
            cluster,
            session.as_deref_mut(),
            (principal, chain),
            &mut epoch,
        )?;
        // Read per frame: a reload may change them in place.
        let limits = cluster.limits();
        let mut clock = FrameClock::new(limits.frame_timeout);
        let max = limits.max_frame_bytes;
        let head = read_head(&mut buf, &mut rd, &mut wr, &mut clock, &mut stop, max);
        let Some(total) = head.await? else {
            return Ok(());
        };
        let header = request_header(buf.unread())?;
        cluster.metrics.request(header.api_key);
        // Boxed, here and below: what a frame on its way needs is held only
        // while it is, so that an idle connection's task stays small.
        let way = Way {
            buf: &mut buf,
            rd: &mut rd,
            wr: &mut wr,
            clock: &mut clock,
            stop: &mut stop,
        };
        // A version the proxy cannot judge is never forwarded.
        if served(header.api_key, header.api_version) != Served::Yes {
            if Box::pin(way.unserved(header, total, &permits, &tx, cluster)).await? {
                return Ok(());
            }
            continue;
        }
        let conn = Shared {
            permits: &permits,
            tx: &tx,
            cluster,
            principal,
            peer,
            inspection,
            session: session.as_deref_mut(),
        };
        let stopped = Box::pin(way.take(header, total, conn)).await?;
        if stopped {
            return Ok(());
        }
    }
}

/// One request whose head is read.
struct Request<'a> {
    header: RequestHeader,
    total: usize,
    permits: &'a Arc<Semaphore>,
    tx: &'a Sender<Slot>,
    cluster: &'a ClusterRuntime,
    /// The connection's principal, if it has one.
    principal: Option<&'a Arc<str>>,
    /// The client's address.
    peer: IpAddr,
    /// What the quota filter needs of the response.
    metered: Option<Box<Metered>>,
    /// A full Fetch that opens a session: the rules it was judged by.
    opens: Option<Box<Judged>>,
    /// A SaslAuthenticate whose answer the inspection reads.
    inspects: bool,
}

impl Request<'_> {
    /// Waits for `n` in-flight slots (after sending upstream what passed
    /// before: their answers free slots); `None` when the generation drains
    /// meanwhile.
    async fn slots<W: AsyncWrite + Unpin>(
        &self,
        n: usize,
        buf: &mut FrameBuf,
        wr: &mut W,
        stop: &mut (impl Future<Output = ()> + Unpin),
    ) -> Result<Option<OwnedSemaphorePermit>, ConnError> {
        // At most MAX_IN_FLIGHT: fits in a u32.
        let n = n as u32;
        if let Ok(permit) = Arc::clone(self.permits).try_acquire_many_owned(n) {
            return Ok(Some(permit));
        }
        buf.flush(wr).await?;
        tokio::select! {
            biased;
            () = stop => Ok(None),
            permit = Arc::clone(self.permits).acquire_many_owned(n) => {
                Ok(Some(permit.map_err(|_| broken_pipe())?))
            }
        }
    }

    /// Queues the request's answer in its slot (one of the proxy's own
    /// given what a quota asks of it). The response side is woken for an
    /// answer of the proxy's own only: one the upstream gives comes with
    /// upstream bytes, which wake it.
    fn send(&mut self, answer: Answer, permit: OwnedSemaphorePermit) {
        let wake = !answer.upstream();
        let (answer, metered) = match (answer, self.metered.take()) {
            (Answer::Local(bytes), Some(m)) => {
                let bytes = throttle::local_answer(&m, &self.header, bytes, self.cluster);
                (Answer::Local(bytes), None)
            }
            other => other,
        };
        // A session is opened only by the upstream's answer.
        let opens = self.opens.take().filter(|_| !wake);
        let slot = Slot {
            answer,
            metered,
            opens,
            inspects: self.inspects,
            _permit: permit,
        };
        self.tx.send(slot, wake);
    }
}

fn broken_pipe() -> ConnError {
    ConnError::Io(std::io::ErrorKind::BrokenPipe.into())
}

/// What a frame on its way works with: the direction's buffer, both ends,
/// the frame's clock and the drain's stop.
struct Way<'a, R, W, S> {
    buf: &'a mut FrameBuf,
    rd: &'a mut R,
    wr: &'a mut W,
    clock: &'a mut FrameClock,
    stop: &'a mut S,
}

impl<R, W, S> Way<'_, R, W, S>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
    S: Future<Output = ()> + Unpin,
{
    /// Meters a Produce or Fetch against the quota `spec` by its client id
    /// (read on until it is in the buffer: it nearly always is, it follows
    /// the head), and holds it, the rest unread, until its turn. What its
    /// response needs; `None` when the generation drained while it was
    /// held.
    async fn meter(
        &mut self,
        spec: &QuotaSpec,
        conn: &Shared<'_>,
        header: &RequestHeader,
        total: usize,
    ) -> Result<Option<Option<Box<Metered>>>, ConnError> {
        let cluster = conn.cluster;
        let (buf, rd, wr, clock) = (
            &mut *self.buf,
            &mut *self.rd,
            &mut *self.wr,
            &mut *self.clock,
        );
        while request_client_id(buf.unread()).is_none() && buf.unread().len() < total.min(CHUNK) {
            if buf.read_more(rd, wr, clock).await? == 0 {
                return Err(ConnError::ClosedMidFrame);
            }
        }
        let id = request_client_id(buf.unread()).flatten();
        let who = (id.as_deref(), conn.principal.map(|p| &**p));
        let (until, metered) = throttle::meter(spec, cluster, header, total, who);
        let passed = throttle::hold(until, cluster, buf, wr, &mut *self.stop).await?;
        Ok(passed.then_some(metered))
    }

    /// Sends a request on upstream, streamed, after queuing its slot when it
    /// expects an answer. True when the generation drained before any of it
    /// went.
    async fn forward(self, mut request: Request<'_>) -> Result<bool, ConnError> {
        let (buf, rd, wr, clock, stop) = (self.buf, self.rd, self.wr, self.clock, self.stop);
        let total = request.total;
        // Produce with acks=0 gets no answer; its acks sit after the client and
        // transactional ids, nearly always in the first chunk.
        let expects = loop {
            let unread = buf.unread();
            match expects_response_from(unread, total, &request.header) {
                Some(expects) => break Some(expects),
                None if unread.len() < total.min(CHUNK) => {
                    if buf.read_more(rd, wr, clock).await? == 0 {
                        return Err(ConnError::ClosedMidFrame);
                    }
                }
                None => break None,
            }
        };
        let Some(expects) = expects else {
            // Ids too long to tell within a chunk: held whole to be read.
            let Some(permit) = request.slots(1, buf, wr, stop).await? else {
                return Ok(true);
            };
            let frame: Bytes = buf.hold(total, rd, wr, clock).await?;
            if expects_response(&frame, &request.header) {
                request.send(Answer::Upstream(request.header), permit);
            }
            let frame = tenant::request(request.cluster, frame, &request.header)?;
            buf.write(wr, &frame).await?;
            return Ok(false);
        };
        if expects {
            let Some(permit) = request.slots(1, buf, wr, stop).await? else {
                return Ok(true);
            };
            request.send(Answer::Upstream(request.header), permit);
        }
        if tenant::renames_request(request.cluster, &request.header) {
            // A tenant's request naming its resources: renamed on its way.
            let (cluster, header) = (request.cluster, &request.header);
            Box::pin(tenant::relay_request(
                header,
                total,
                cluster,
                buf,
                (rd, wr),
                clock,
            ))
            .await?;
            return Ok(false);
        }
        buf.stream(total, rd, wr, clock).await?;
        Ok(false)
    }
}

fn decide(chain: &Filters, header: &RequestHeader) -> Verdict {
    let head = RequestHead {
        api_key: header.api_key,
        api_version: header.api_version,
    };
    chain
        .head
        .iter()
        .map(|f| f.on_request(&head))
        .find(|v| *v != Verdict::Forward)
        .unwrap_or(Verdict::Forward)
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
