//! Re-authentication (KIP-368) on a connection whose client the proxy
//! authenticated itself (`authentication.sasl`): its SaslHandshake and
//! SaslAuthenticate are answered by the proxy, in their turn, never
//! forwarded (the upstream knows the proxy, not the client). The client
//! must prove the same principal again; the session's end moves on by
//! `sessionLifetime` (no further than an OAUTHBEARER token's expiry). A connection whose session ends without it is closed
//! at its next request, as a broker does.

use std::net::IpAddr;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::{Request, Way};
use crate::dataplane::block::charged;
use crate::dataplane::direction::{Answer, ConnError};
use crate::dataplane::refused::Unauthenticated;
use crate::dataplane::splice::Splice;
use crate::dataplane::terminate::{At, Exchange, Outcome};

/// A terminated connection's session: when it ends, and the exchange of a
/// re-authentication under way.
#[derive(Default)]
pub(in crate::dataplane) struct SaslSession {
    /// `None`: it does not end.
    pub(in crate::dataplane) expires: Option<Instant>,
    exchange: Exchange,
    /// A re-authentication refused: the connection closes at its next
    /// request (its answer was queued first).
    refused: Option<Unauthenticated>,
}

impl SaslSession {
    /// A session that ends at `expires`.
    pub(in crate::dataplane) fn until(expires: Option<Instant>) -> Self {
        SaslSession {
            expires,
            ..SaslSession::default()
        }
    }

    /// Why the connection must close before its next request, if it must.
    pub(super) fn over(&mut self) -> Option<ConnError> {
        if let Some(why) = self.refused.take() {
            return Some(ConnError::Unauthenticated(why));
        }
        let ended = self.expires.is_some_and(|e| Instant::now() >= e);
        ended.then_some(ConnError::SessionExpired)
    }
}

impl<R, W, S> Way<'_, R, W, S>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
    S: Future<Output = ()> + Unpin,
{
    /// Answers a SaslHandshake or SaslAuthenticate of a re-authentication.
    /// True when the generation drained before it had a slot.
    pub(super) async fn reauthenticate(
        self,
        mut request: Request<'_>,
        session: &mut SaslSession,
        peer: IpAddr,
    ) -> Result<bool, ConnError> {
        let (buf, rd, wr, clock, stop) = (self.buf, self.rd, self.wr, self.clock, self.stop);
        let cluster = request.cluster;
        let Some(permit) = request.slots(1, buf, wr, stop).await? else {
            return Ok(true);
        };
        let frame = buf.hold(request.total, rd, wr, clock).await?;
        // The settings in force now: a new credentials file applies.
        let auth = cluster.authentication();
        let Some(sasl) = auth.as_ref().and_then(|a| a.sasl.as_ref()) else {
            return Err(ConnError::SessionExpired);
        };
        let at = At {
            sasl,
            cluster,
            peer,
        };
        let (answer, outcome) = session.exchange.frame(&frame, &request.header, &at).await?;
        drop(frame);
        match outcome {
            Outcome::More => {}
            Outcome::Proved(user, lifetime) if request.principal.is_some_and(|p| **p == *user) => {
                session.expires = lifetime.map(|l| Instant::now() + l);
                tracing::debug!(principal = %user, "client re-authenticated");
            }
            Outcome::Proved(user, _) => {
                let why = format!("re-authenticated as {user:?}, another principal");
                session.refused = Some(Unauthenticated::Exchange(why));
            }
            Outcome::Refused(why) => session.refused = Some(why),
        }
        let charge = cluster.budget().force(answer.len());
        request.send(Answer::Local(charged(answer, charge)), permit);
        Ok(false)
    }
}
