//! A request body that must arrive whole within a fixed time from the moment
//! its headers were in. Unlike a timeout between chunks (tower-http's
//! `RequestBodyTimeoutLayer`, which restarts at every frame), a caller
//! sending one byte every few seconds is cut off at the deadline too.

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use hyper::body::{Body as HttpBody, Bytes, Frame, SizeHint};
use tokio::time::Sleep;

/// The body did not arrive whole before its deadline. The message says
/// "timeout", which is how handlers tell it from other body errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyDeadlineExceeded(pub Duration);

impl std::fmt::Display for BodyDeadlineExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "request body timeout: not received in full within {:?}",
            self.0
        )
    }
}

impl std::error::Error for BodyDeadlineExceeded {}

/// `body`, failing with [`BodyDeadlineExceeded`] once `total` has passed
/// since this wrapper was made, however much of it has arrived.
#[derive(Debug)]
pub struct DeadlineBody {
    inner: Body,
    total: Duration,
    deadline: Pin<Box<Sleep>>,
    done: bool,
}

impl DeadlineBody {
    /// Starts the clock now.
    pub fn new(inner: Body, total: Duration) -> DeadlineBody {
        DeadlineBody {
            inner,
            total,
            deadline: Box::pin(tokio::time::sleep(total)),
            done: false,
        }
    }
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        // The deadline first: bytes that keep trickling in do not extend it.
        if self.deadline.as_mut().poll(cx).is_ready() {
            self.done = true;
            let total = self.total;
            return Poll::Ready(Some(Err(axum::Error::new(BodyDeadlineExceeded(total)))));
        }
        let frame = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = frame {
            self.done = true;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Wraps a request's body in a [`DeadlineBody`] of `total`.
pub fn with_deadline(request: Request, total: Duration) -> Request {
    request.map(|body| Body::new(DeadlineBody::new(body, total)))
}
