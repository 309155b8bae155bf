//! The versions served: a request at a version the proxy cannot judge
//! (outside what its ApiVersions answer offers, `sluice_kafka::versions`)
//! is not forwarded. ApiVersions at such a version gets UNSUPPORTED_VERSION,
//! as Kafka answers it, and the client asks again at a version offered;
//! any other API closes the connection, as Kafka does (it has no answer
//! for a version it does not know).

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use sluice_kafka::api_name;
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::versions::{Served, served, unsupported_api_versions};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

use super::{Request, Way};
use crate::dataplane::block::charged;
use crate::dataplane::cluster::ClusterRuntime;
use crate::dataplane::direction::{Answer, ConnError, Slot};
use crate::dataplane::inflight::Sender;
use crate::dataplane::splice::Splice;

impl<R, W, S> Way<'_, R, W, S>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
    S: Future<Output = ()> + Unpin,
{
    /// Refuses the request `header` (of `total` bytes), at a version
    /// [`served`] is not `Yes` for: ApiVersions is answered, anything else
    /// closes the connection. True when the generation drained before it
    /// had a slot.
    pub(super) async fn unserved(
        self,
        header: RequestHeader,
        total: usize,
        permits: &Arc<Semaphore>,
        tx: &Sender<Slot>,
        cluster: &ClusterRuntime,
    ) -> Result<bool, ConnError> {
        let (api, version) = (api_name(header.api_key), header.api_version);
        match served(header.api_key, version) {
            Served::Yes => Ok(false),
            Served::Closed { min, max } => Err(ConnError::Unsupported {
                api,
                version,
                min,
                max,
            }),
            Served::Refused => {
                let answer = unsupported_api_versions(header.correlation_id);
                let request = Request {
                    header,
                    total,
                    permits,
                    tx,
                    cluster,
                    principal: None,
                    peer: std::net::Ipv4Addr::UNSPECIFIED.into(),
                    metered: None,
                    opens: None,
                    inspects: false,
                };
                self.answer(request, answer).await
            }
        }
    }

    /// Answers a request with `answer`, in its turn; nothing of it goes
    /// upstream. True when the generation drained before it had a slot.
    pub(super) async fn answer(
        self,
        mut request: Request<'_>,
        answer: Bytes,
    ) -> Result<bool, ConnError> {
        let (buf, rd, wr, clock, stop) = (self.buf, self.rd, self.wr, self.clock, self.stop);
        let Some(permit) = request.slots(1, buf, wr, stop).await? else {
            return Ok(true);
        };
        drop(buf.hold(request.total, rd, wr, clock).await?);
        let charge = request.cluster.budget().force(answer.len());
        request.send(Answer::Local(charged(answer, charge)), permit);
        Ok(false)
    }
}
