//! What a connection and its two directions ([`requests`](super::requests),
//! [`responses`](super::responses)) share, below all of them and below the
//! ways they move bytes (`buffer`, `splice`, `patience`): why a connection
//! ends, the clock of a frame being read, the in-flight slots and the chunk
//! a busy direction reads into.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use sluice_kafka::frame::{FrameError, RequestHeader};
use sluice_kafka::rewrite::RewriteError;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};

use super::metered::Metered;
pub(super) use super::split::Merged;
use super::upstream::UpstreamError;
use crate::metrics::{ClientCause, Judged};
use crate::signals::CloseReason;

/// Requests that may await their response at once on one connection,
/// answered by the upstream or by the proxy; more stop the proxy reading
/// from the client until responses are written.
pub(super) const MAX_IN_FLIGHT: usize = 1024;
/// How much a busy direction reads at a time, and so holds.
pub(super) const CHUNK: usize = 64 * 1024;
/// What a direction reads into instead while a frame with at least this
/// much left streams through it: a quarter as many reads and writes per
/// megabyte of a Fetch response or a Produce request (see `buffer`).
pub(super) const WIDE_CHUNK: usize = 256 * 1024;

/// An in-flight slot, in request order; the permit it carries is returned
/// when the response has been passed on to the client.
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) answer: Answer,
    /// What the quota filter needs of the response, when it counts it.
    pub(super) metered: Option<Box<Metered>>,
    /// A full Fetch that opens a session: the consume rules it was judged
    /// by, remembered with the session id its response gives.
    pub(super) opens: Option<Box<Judged>>,
    /// A SaslAuthenticate the inspection reads the answer of (`inspect`).
    pub(super) inspects: bool,
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
    /// The upstream, for the part of a request a topic policy allowed: the
    /// response is held and merged with the denied part's errors.
    Merged(Box<Merged>),
}

impl Answer {
    /// Whether the upstream answers it.
    pub(super) fn upstream(&self) -> bool {
        !matches!(self, Answer::Local(_))
    }
}

/// The time a client has to send the rest of a frame it started: only time
/// spent waiting for the client's bytes counts (not waits for the upstream
/// or for memory).
///
/// A read that has its bytes at once costs no clock at all. The frame's
/// first read that waits makes one timer, at what is left of the frame's
/// time; each later wait of the frame moves that timer's deadline on (never
/// earlier: a wait starts after the last one ended, with that one's time
/// taken off), which tokio does without touching its timer wheel. So a
/// frame costs at most one timer entry, where a `tokio::time::timeout` per
/// read made and cancelled one for every read that waited.
#[derive(Debug)]
pub(super) struct FrameClock {
    left: Option<Duration>,
    limit: Duration,
    /// Made at the frame's first wait: most frames never need it.
    timer: Option<Pin<Box<Sleep>>>,
}

impl FrameClock {
    /// A frame from a client: `limits.frameTimeout`.
    pub(super) fn new(limit: Duration) -> Self {
        FrameClock {
            left: Some(limit),
            limit,
            timer: None,
        }
    }

    /// A frame from the upstream: no limit.
    pub(super) fn unlimited() -> Self {
        FrameClock {
            left: None,
            limit: Duration::MAX,
            timer: None,
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
        let mut read = std::pin::pin!(read);
        let timer = &mut self.timer;
        // When this read began to wait, if it did.
        let mut since: Option<Instant> = None;
        let outcome = std::future::poll_fn(|cx| {
            // The read first: bytes that are there win over the deadline.
            if let Poll::Ready(r) = read.as_mut().poll(cx) {
                return Poll::Ready(Some(r));
            }
            if since.is_none() {
                let now = Instant::now();
                since = Some(now);
                // A limit too far to add is as good as none.
                let deadline = now.checked_add(left).unwrap_or(now + FAR);
                timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)))
                    .as_mut()
                    .reset(deadline);
            }
            // Armed above, at this read's first wait.
            timer.as_mut().map_or(Poll::Pending, |armed| {
                armed.as_mut().poll(cx).map(|()| None)
            })
        })
        .await;
        if let Some(since) = since {
            self.left = Some(left.saturating_sub(since.elapsed()));
        }
        match outcome {
            Some(read) => read.map_err(ConnError::Io),
            None => Err(ConnError::FrameTimeout(self.limit)),
        }
    }
}

/// A deadline that never comes in practice.
const FAR: Duration = Duration::from_secs(100 * 365 * 86_400);

/// The client took none of the bytes offered within the frame's time.
#[derive(Debug, thiserror::Error)]
#[error("the client took no bytes of a frame within {0:?}")]
pub(super) struct WriteStalled(pub(super) Duration);

/// Why a connection ended early.
#[derive(Debug, thiserror::Error)]
pub(super) enum ConnError {
    #[error("{0}")]
    Io(std::io::Error),
    #[error("{0}")]
    Frame(#[from] FrameError),
    #[error("{api} v{version} is not served (the versions offered are v{min} to v{max})")]
    Unsupported {
        api: &'static str,
        version: i16,
        min: i16,
        max: i16,
    },
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
    #[error(
        "no principal: no authentication.mtls rule maps the client certificate ({0}), and authentication.required is true"
    )]
    NoPrincipal(String),
    #[error(
        "no principal: {0} before a SASL authentication the broker accepted, and authentication.required is true"
    )]
    NotYetAuthenticated(&'static str),
    #[error("not authenticated: {0}")]
    Unauthenticated(super::refused::Unauthenticated),
    #[error("principal {0:?} was revoked: authentication no longer knows it")]
    Revoked(String),
    #[error("the SASL session ended without a re-authentication (sessionLifetime)")]
    SessionExpired,
    #[error("encoding an answer: {0}")]
    Encode(#[from] sluice_kafka::encode::EncodeError),
}

impl ConnError {
    /// Why, as `sluice_connections_closed_on_error_total` and the client
    /// signals name it.
    pub(super) fn reason(&self) -> CloseReason {
        match self {
            ConnError::Io(_) | ConnError::ClosedMidFrame => CloseReason::Io,
            ConnError::Frame(FrameError::TooLarge { .. }) => CloseReason::TooLarge,
            ConnError::Frame(_) | ConnError::Unsupported { .. } => CloseReason::Malformed,
            ConnError::FrameTimeout(_) => CloseReason::FrameTimeout,
            ConnError::WriteTimeout(_) => CloseReason::WriteTimeout,
            ConnError::Rewrite(_) | ConnError::Encode(_) => CloseReason::Rewrite,
            ConnError::Unauthenticated(_)
            | ConnError::Revoked(_)
            | ConnError::SessionExpired
            | ConnError::NotYetAuthenticated(_) => CloseReason::Authentication,
            ConnError::Upstream(e) if e.is_auth() => CloseReason::UpstreamAuth,
            ConnError::Upstream(_) => CloseReason::Upstream,
            ConnError::Tls(_) | ConnError::NoPrincipal(_) => CloseReason::Tls,
            ConnError::Mismatch { .. } | ConnError::Unsolicited | ConnError::UpstreamClosed(_) => {
                CloseReason::UpstreamProtocol
            }
            ConnError::Forced => CloseReason::DrainDeadline,
        }
    }
}

impl ConnError {
    /// What a client did wrong, when it is the client's error.
    pub(super) fn client_cause(&self) -> Option<ClientCause> {
        match self {
            ConnError::Frame(FrameError::TooLarge { .. }) => Some(ClientCause::TooLarge),
            ConnError::Frame(_) => Some(ClientCause::Malformed),
            ConnError::Unsupported { .. } => Some(ClientCause::UnsupportedVersion),
            ConnError::FrameTimeout(_) => Some(ClientCause::FrameTimeout),
            ConnError::NoPrincipal(_) | ConnError::NotYetAuthenticated(_) => {
                Some(ClientCause::NoPrincipal)
            }
            ConnError::Unauthenticated(_) => Some(ClientCause::Unauthenticated),
            _ => None,
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

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    const LIMIT: Duration = Duration::from_secs(30);

    #[tokio::test(start_paused = true)]
    async fn only_waits_count_they_add_up_within_a_frame_and_share_one_timer() {
        let (mut client, mut rd) = tokio::io::duplex(64);
        // A client that sends a byte at once, then one every 20 s.
        let sender = tokio::spawn(async move {
            client.write_all(&[1]).await.unwrap();
            for _ in 0..2 {
                tokio::time::sleep(Duration::from_secs(20)).await;
                client.write_all(&[1]).await.unwrap();
            }
            client
        });
        tokio::task::yield_now().await;
        let mut clock = FrameClock::new(LIMIT);
        let mut byte = [0u8; 1];
        // Bytes that are there cost no clock.
        assert_eq!(clock.read(rd.read(&mut byte)).await.unwrap(), 1);
        assert!(clock.timer.is_none());
        // A wait of 20 s: within the limit, and one timer.
        assert_eq!(clock.read(rd.read(&mut byte)).await.unwrap(), 1);
        let timer: *const Sleep = &**clock.timer.as_ref().unwrap();
        // Another 20 s would be 40 s of waiting: cut 10 s in.
        let started = Instant::now();
        let e = clock.read(rd.read(&mut byte)).await.unwrap_err();
        assert!(matches!(e, ConnError::FrameTimeout(LIMIT)), "{e}");
        let waited = started.elapsed();
        assert!(waited >= Duration::from_secs(10) && waited < Duration::from_secs(11));
        // The frame's one timer, moved on, not another.
        assert!(std::ptr::eq(&**clock.timer.as_ref().unwrap(), timer));
        // The next frame has the whole limit again: its byte comes 10 s on.
        let mut next = FrameClock::new(LIMIT);
        assert_eq!(next.read(rd.read(&mut byte)).await.unwrap(), 1);
        drop(sender.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn a_frame_from_the_upstream_waits_as_long_as_it_takes() {
        let (mut upstream, mut rd) = tokio::io::duplex(64);
        let sender = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            upstream.write_all(&[1]).await.unwrap();
            upstream
        });
        let mut clock = FrameClock::unlimited();
        let mut byte = [0u8; 1];
        assert_eq!(clock.read(rd.read(&mut byte)).await.unwrap(), 1);
        assert!(clock.timer.is_none());
        drop(sender.await.unwrap());
    }
}
