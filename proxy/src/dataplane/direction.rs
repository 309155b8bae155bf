//! What a connection and its two directions ([`requests`](super::requests),
//! [`responses`](super::responses)) share, below all of them and below the
//! ways they move bytes (`buffer`, `splice`, `patience`): why a connection
//! ends, the clock of a frame being read, the in-flight slots and the chunk
//! a busy direction reads into.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use sluice_kafka::frame::{FrameError, RequestHeader};
use sluice_kafka::rewrite::RewriteError;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::metered::Metered;
pub(super) use super::split::Merged;
use super::upstream::UpstreamError;
use crate::signals::CloseReason;

/// Requests that may await their response at once on one connection,
/// answered by the upstream or by the proxy; more stop the proxy reading
/// from the client until responses are written.
pub(super) const MAX_IN_FLIGHT: usize = 1024;
/// How much a busy direction reads at a time, and so holds.
pub(super) const CHUNK: usize = 64 * 1024;

/// An in-flight slot, in request order; the permit it carries is returned
/// when the response has been passed on to the client.
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) answer: Answer,
    /// What the quota filter needs of the response, when it counts it.
    pub(super) metered: Option<Box<Metered>>,
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
    /// Why, as `sluice_connections_closed_on_error_total` and the client
    /// signals name it.
    pub(super) fn reason(&self) -> CloseReason {
        match self {
            ConnError::Io(_) | ConnError::ClosedMidFrame => CloseReason::Io,
            ConnError::Frame(FrameError::TooLarge { .. }) => CloseReason::TooLarge,
            ConnError::Frame(_) => CloseReason::Malformed,
            ConnError::FrameTimeout(_) => CloseReason::FrameTimeout,
            ConnError::WriteTimeout(_) => CloseReason::WriteTimeout,
            ConnError::Rewrite(_) => CloseReason::Rewrite,
            ConnError::Upstream(e) if e.is_auth() => CloseReason::UpstreamAuth,
            ConnError::Upstream(_) => CloseReason::Upstream,
            ConnError::Tls(_) => CloseReason::Tls,
            ConnError::Mismatch { .. } | ConnError::Unsolicited | ConnError::UpstreamClosed(_) => {
                CloseReason::UpstreamProtocol
            }
            ConnError::Forced => CloseReason::DrainDeadline,
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
