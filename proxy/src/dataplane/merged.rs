//! Responses to requests a topic policy split: the upstream answered the
//! allowed part; its response is held whole (these APIs' responses are
//! small: never Fetch, which is not split), rewritten like any other when
//! it carries broker addresses, merged with the denied topics' errors and
//! written. Kept apart from the relay of every other response, which this
//! does not change.

use std::fmt;
use std::sync::Arc;

use sluice_config::policy::Operation;
use sluice_kafka::frame::{
    RESPONSE_HEAD, RequestHeader, response_correlation_id, response_frame_size,
};
use sluice_kafka::policy::Merge;
use tokio::io::{AsyncRead, AsyncWrite};

use super::block::charged;
use super::buffer::FrameBuf;
use super::cluster::ClusterRuntime;
use super::direction::{ConnError, FrameClock};
use super::responses::{held_whole, transform};
use super::splice::Splice;
use crate::filter::topic_policy::TopicPolicy;

/// What a split request's response is merged with, and the policy it was
/// judged by (listed topics in the response are judged by it too: the one
/// the request took, whatever a reload put in force since).
pub(crate) struct Merged {
    pub(super) header: RequestHeader,
    merge: Merge,
    policy: Arc<TopicPolicy>,
    op: Operation,
    client: String,
}

impl fmt::Debug for Merged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Merged({:?}, {:?})", self.header, self.merge)
    }
}

impl Merged {
    pub(super) fn new(
        header: RequestHeader,
        merge: Merge,
        policy: Arc<TopicPolicy>,
        op: Operation,
        client: String,
    ) -> Self {
        Merged {
            header,
            merge,
            policy,
            op,
            client,
        }
    }
}

/// Passes on the response to a split request, merged.
pub(super) async fn relay_merged<R, W>(
    merged: &Merged,
    max: u32,
    buf: &mut FrameBuf,
    rd: &mut R,
    wr: &mut W,
    cluster: &ClusterRuntime,
) -> Result<(), ConnError>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
{
    let header = &merged.header;
    let mut clock = FrameClock::unlimited();
    let total = loop {
        let unread = buf.unread();
        let total = response_frame_size(unread, max)?;
        if let Some(total) = total.filter(|_| unread.len() >= RESPONSE_HEAD) {
            break total;
        }
        if buf.read_more(rd, wr, &mut clock).await? == 0 {
            return Err(ConnError::ClosedMidFrame);
        }
    };
    let got = response_correlation_id(buf.unread())?;
    if got != header.correlation_id {
        return Err(ConnError::Mismatch {
            expected: header.correlation_id,
            got,
        });
    }
    let frame = buf.hold(total, rd, wr, &mut clock).await?;
    let upstream = if held_whole(header) {
        transform(&frame, header, cluster)?.to_bytes()
    } else {
        frame.clone()
    };
    let (policy, op, client) = (&merged.policy, merged.op, merged.client.as_str());
    let out = merged
        .merge
        .apply(&upstream, &mut |topic| policy.allows(op, topic, client))?;
    drop((frame, upstream));
    let charge = cluster.budget().force(out.len());
    buf.write(wr, &charged(out, charge)).await?;
    Ok(())
}
