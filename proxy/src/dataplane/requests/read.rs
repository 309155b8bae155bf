//! Between requests: waiting for the next one's head (or the drain), and
//! checking the connection may go on serving its client.

use rustls_pki_types::CertificateDer;
use std::sync::Arc;

use sluice_kafka::frame::{REQUEST_HEAD, request_frame_size};
use tokio::io::{AsyncRead, AsyncWrite};

use super::jitter;
use super::reauth::SaslSession;
use crate::dataplane::buffer::FrameBuf;
use crate::dataplane::cluster::ClusterRuntime;
use crate::dataplane::direction::{ConnError, FrameClock};
use crate::dataplane::splice::Splice;

/// Resolves once the generation drains, at this connection's own moment
/// within the spread window: it then stops taking requests, between
/// requests; what is in flight is still answered by the response side.
pub(super) async fn drained(cluster: &ClusterRuntime) {
    cluster.drain.wait().await;
    tokio::time::sleep(jitter(cluster.drain_spread())).await;
}

/// Whether the connection may go on serving its client: its SASL session
/// (if the proxy authenticated it) has not ended, and its principal still
/// holds, checked again whenever `authentication` or `clientCaFile`
/// changes in place (`epoch`): a user no longer listed, or a certificate
/// (`chain`) no longer trusted or mapped otherwise, is revoked at its next
/// request.
pub(super) fn still_served(
    cluster: &ClusterRuntime,
    session: Option<&mut SaslSession>,
    (principal, chain): (Option<&Arc<str>>, Option<&[CertificateDer<'static>]>),
    epoch: &mut u64,
) -> Result<(), ConnError> {
    if let Some(over) = session.and_then(SaslSession::over) {
        return Err(over);
    }
    if let Some(p) = principal
        && cluster.auth_epoch() != *epoch
    {
        *epoch = cluster.auth_epoch();
        let holds = match chain {
            Some(chain) => cluster.still_verifies(chain) && still_maps(cluster, chain, p),
            None => cluster.still_knows(p),
        };
        if !holds {
            return Err(ConnError::Revoked(p.to_string()));
        }
    }
    Ok(())
}

/// Whether the rules in force map the certificate `chain` to `principal`.
fn still_maps(
    cluster: &ClusterRuntime,
    chain: &[CertificateDer<'static>],
    principal: &str,
) -> bool {
    let auth = cluster.authentication();
    let rules = auth.as_ref().and_then(|a| a.mtls.as_ref());
    let mapped = rules.and_then(|r| crate::dataplane::identity::principal(r, Some(chain)));
    mapped.as_deref() == Some(principal)
}

/// Between frames with nothing read: sends what passed, and waits for the
/// client holding no buffer. False when the client closed or the
/// generation drains first.
pub(super) async fn between_frames<R, W>(
    buf: &mut FrameBuf,
    rd: &mut R,
    wr: &mut W,
    stop: &mut (impl Future<Output = ()> + Unpin),
) -> Result<bool, ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    buf.flush(wr).await?;
    buf.release_if_empty();
    // In this order (not at random: that costs a random number per
    // select): a drain stops the connection even while its client keeps
    // sending.
    let n = tokio::select! {
        biased;
        () = stop => return Ok(false),
        n = buf.read_idle(rd) => n?,
    };
    if n == 0 {
        return Ok(false);
    }
    if buf.adopts() {
        Box::pin(buf.adopt(n)).await;
    }
    Ok(true)
}

/// Reads until the head of the next request is in `buf`: its size, or
/// `None` when the client closed or the generation drains first (nothing of
/// the frame has gone upstream, so a drain may still stop here).
pub(super) async fn read_head<R, W>(
    buf: &mut FrameBuf,
    rd: &mut R,
    wr: &mut W,
    clock: &mut FrameClock,
    stop: &mut (impl Future<Output = ()> + Unpin),
    max_frame_bytes: u32,
) -> Result<Option<usize>, ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    loop {
        let unread = buf.unread();
        let total = request_frame_size(unread, max_frame_bytes)?;
        if let Some(total) = total.filter(|_| unread.len() >= REQUEST_HEAD) {
            return Ok(Some(total));
        }
        buf.flush(wr).await?;
        let n = tokio::select! {
            biased;
            () = &mut *stop => return Ok(None),
            n = Box::pin(buf.read_more(rd, wr, clock)) => n?,
        };
        if n == 0 {
            return Ok(None);
        }
    }
}
