//! A request a header filter (`deny-apis`) refuses: answered by the proxy,
//! counted and audited; nothing of it goes upstream.

use sluice_kafka::api_name;
use sluice_kafka::deny::deny_response;
use sluice_kafka::policy::client_id;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{ANSWER_BYTES_PER_SLOT, Request, Way};
use crate::audit::{Event, Line, Names};
use crate::dataplane::block::charged;
use crate::dataplane::direction::{Answer, ConnError, MAX_IN_FLIGHT};
use crate::dataplane::splice::Splice;

impl<R, W, S> Way<'_, R, W, S>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
    S: Future<Output = ()> + Unpin,
{
    /// Answers a request a filter denies: held whole (to decode it), answered
    /// in its turn, freed. True when the generation drained before it had a
    /// slot.
    pub(super) async fn deny(
        self,
        mut request: Request<'_>,
        error_code: i16,
    ) -> Result<bool, ConnError> {
        let (buf, rd, wr, clock, stop) = (self.buf, self.rd, self.wr, self.clock, self.stop);
        let (header, cluster) = (request.header, request.cluster);
        let Some(mut permit) = request.slots(1, buf, wr, stop).await? else {
            return Ok(true);
        };
        let frame = buf.hold(request.total, rd, wr, clock).await?;
        let answer = deny_response(&frame, &header, error_code)?;
        let api = api_name(header.api_key);
        let line = Line {
            event: Event::Denied,
            principal: request.principal.map(|p| &**p),
            client_id: client_id(&frame).unwrap_or_default(),
            peer: Some(request.peer),
            operation: api,
            resources: &Names::default(),
            outcome: "denied by deny-apis",
        };
        cluster.audit.write(cluster.name(), &line);
        drop(frame);
        cluster.metrics.denied(api);
        // A large answer waits in as many slots as its size asks.
        let more = (answer.len() / ANSWER_BYTES_PER_SLOT).min(MAX_IN_FLIGHT - 1);
        if more > 0 {
            let Some(more) = request.slots(more, buf, wr, stop).await? else {
                return Ok(true);
            };
            permit.merge(more);
        }
        let charge = cluster.budget().force(answer.len());
        request.send(Answer::Local(charged(answer, charge)), permit);
        Ok(false)
    }
}
