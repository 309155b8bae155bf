//! A SaslHandshake or SaslAuthenticate under SASL inspection: held whole
//! (they are small), read (`dataplane::inspect`), and forwarded as they
//! came; a SaslAuthenticate's answer is read too.

use tokio::io::{AsyncRead, AsyncWrite};

use super::{Request, Way};
use crate::dataplane::direction::{Answer, ConnError};
use crate::dataplane::inspect::{AUTHENTICATE, Inspection};
use crate::dataplane::splice::Splice;

impl<R, W, S> Way<'_, R, W, S>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
    S: Future<Output = ()> + Unpin,
{
    /// Reads and forwards `request`. True when the generation drained
    /// before it had a slot.
    pub(super) async fn inspected(
        self,
        mut request: Request<'_>,
        inspection: &Inspection,
    ) -> Result<bool, ConnError> {
        let (buf, rd, wr, clock, stop) = (self.buf, self.rd, self.wr, self.clock, self.stop);
        let Some(permit) = request.slots(1, buf, wr, stop).await? else {
            return Ok(true);
        };
        let frame = buf.hold(request.total, rd, wr, clock).await?;
        inspection.request(&frame, &request.header);
        request.inspects = request.header.api_key == AUTHENTICATE;
        request.cluster.signals.forwarded();
        request.send(Answer::Upstream(request.header), permit);
        buf.write(wr, &frame).await?;
        Ok(false)
    }
}
