//! Requests a topic policy looks at: held whole (bounded like any held
//! frame, by `maxFrameBytes` and the buffer budget), judged per topic, and
//! then forwarded as they came, answered by the proxy, or split (the
//! allowed part forwarded, the response merged: `merged`).

use std::borrow::Cow;
use std::sync::Arc;

use sluice_config::policy::{Client, Operation};
use sluice_kafka::frame::expects_response;
use sluice_kafka::policy::{Policed, TopicRef, client_id, fetch_head, produce_head};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{ANSWER_BYTES_PER_SLOT, Request, Way};
use crate::audit::{Event, Line, Names};
use crate::dataplane::block::charged;
use crate::dataplane::cluster::ClusterRuntime;
use crate::dataplane::direction::{Answer, CHUNK, ConnError, MAX_IN_FLIGHT, Merged};
use crate::dataplane::splice::Splice;
use crate::dataplane::tenant;
use crate::filter::topic_policy::{Denials, TopicPolicy};

impl<R, W, S> Way<'_, R, W, S>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
    S: Future<Output = ()> + Unpin,
{
    /// A Produce request under a policy: streamed as ever (spliced, in
    /// plaintext) when its client may produce to every topic, or when it
    /// writes to one topic it may produce to (both read from its first
    /// bytes; a topic named by id, from v13, by the name Metadata taught);
    /// held and judged per topic otherwise. True when the
    /// generation drained before any of it went.
    pub(super) async fn produce(
        mut self,
        request: Request<'_>,
        policy: Arc<TopicPolicy>,
    ) -> Result<bool, ConnError> {
        let (version, ids) = (request.header.api_version, &request.cluster.topic_ids);
        let principal = request.principal.map(|p| &**p);
        let streams = self
            .head_open(request.total, |unread| {
                let head = produce_head(unread, version)?;
                let client = Client {
                    id: head.client_id,
                    principal,
                };
                let first = head.first.map(Cow::Borrowed).or_else(|| {
                    let name = head.first_id.and_then(|id| ids.name(id));
                    name.map(Cow::Owned)
                });
                Some(
                    policy.open_for(Operation::Produce, client)
                        || head.topics == 1
                            && first.is_some_and(|t| policy.allows(Operation::Produce, &t, client)),
                )
            })
            .await?;
        if streams {
            request.cluster.signals.forwarded();
            return self.forward(request).await;
        }
        self.police(request, policy, Operation::Produce).await
    }

    /// A Fetch request under a policy: forwarded as it came, unheld and
    /// undecoded, when its client may consume every topic it names (read
    /// from its first bytes; by id, from v13, by the names Metadata
    /// taught); held and judged per topic otherwise. True when the
    /// generation drained before any of it went.
    pub(super) async fn fetch(
        mut self,
        request: Request<'_>,
        policy: Arc<TopicPolicy>,
    ) -> Result<bool, ConnError> {
        let (version, ids) = (request.header.api_version, &request.cluster.topic_ids);
        let principal = request.principal.map(|p| &**p);
        let op = Operation::Consume;
        let open = self
            .head_open(request.total, |unread| {
                let head = fetch_head(unread, version)?;
                let client = Client {
                    id: head.client_id,
                    principal,
                };
                let allowed = |topic: &TopicRef<'_>| match topic {
                    TopicRef::Name(name) => policy.allows(op, name, client),
                    TopicRef::Id(id) => {
                        ids.name(*id).is_some_and(|n| policy.allows(op, &n, client))
                    }
                };
                Some(policy.open_for(op, client) || head.topics.iter().all(allowed))
            })
            .await?;
        if open {
            request.cluster.signals.forwarded();
            return self.forward(request).await;
        }
        self.police(request, policy, op).await
    }

    /// Reads on until `open` tells from a request's first bytes whether it
    /// passes unheld (`None`: not all there yet); false when a chunk (or
    /// the whole request, of `total` bytes) is read and it cannot tell
    /// (names too long to read there: the request is held and decoded).
    async fn head_open(
        &mut self,
        total: usize,
        open: impl Fn(&[u8]) -> Option<bool>,
    ) -> Result<bool, ConnError> {
        loop {
            let unread = self.buf.unread();
            if let Some(open) = open(unread) {
                return Ok(open);
            }
            if unread.len() >= total.min(CHUNK) {
                return Ok(false);
            }
            if self.buf.read_more(self.rd, self.wr, self.clock).await? == 0 {
                return Err(ConnError::ClosedMidFrame);
            }
        }
    }

    /// Judges a request of `op` per topic. True when the generation drained
    /// before it had a slot.
    pub(super) async fn police(
        self,
        mut request: Request<'_>,
        policy: Arc<TopicPolicy>,
        op: Operation,
    ) -> Result<bool, ConnError> {
        let (buf, rd, wr, clock, stop) = (self.buf, self.rd, self.wr, self.clock, self.stop);
        let (header, cluster) = (request.header, request.cluster);
        let Some(mut permit) = request.slots(1, buf, wr, stop).await? else {
            return Ok(true);
        };
        let frame = buf.hold(request.total, rd, wr, clock).await?;
        // Produce with acks=0 gets no answer, whatever becomes of it.
        let answered = expects_response(&frame, &header);
        let client = client_id(&frame).unwrap_or_default().to_owned();
        let principal = request.principal.cloned();
        let who = Client {
            id: &client,
            principal: principal.as_deref(),
        };
        let mut denials = Denials::default();
        let policed =
            policy.police((&frame, &header), &cluster.topic_ids, op, who, &mut denials)?;
        let from = Judged::of(&request, op, &client, principal.as_deref());
        let (sent, answer) = match policed {
            Policed::Forward => {
                from.record(&denials, 0, true);
                (frame, Answer::Upstream(header))
            }
            Policed::Split {
                request: part,
                merge,
                denied,
            } => {
                from.record(&denials, denied, true);
                let sent = match part {
                    Some(part) => {
                        drop(frame);
                        let charge = cluster.budget().force(part.len());
                        charged(part, charge)
                    }
                    None => frame,
                };
                let merged = Merged::new(header, merge, policy, op, (client, principal));
                (sent, Answer::Merged(Box::new(merged)))
            }
            Policed::Answer {
                frame: answer,
                denied,
            } => {
                drop(frame);
                from.record(&denials, denied, false);
                if !answered {
                    return Ok(false);
                }
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
                return Ok(false);
            }
        };
        cluster.signals.forwarded();
        if answered {
            request.send(answer, permit);
        }
        let sent = tenant::request(cluster, sent, &header)?;
        buf.write(wr, &sent).await?;
        Ok(false)
    }
}

/// Whom and what a policed request came from: for its count and audit.
struct Judged<'a> {
    cluster: &'a ClusterRuntime,
    op: Operation,
    client: &'a str,
    principal: Option<&'a str>,
    peer: std::net::IpAddr,
}

impl<'a> Judged<'a> {
    fn of(
        request: &Request<'a>,
        op: Operation,
        client: &'a str,
        principal: Option<&'a str>,
    ) -> Self {
        Judged {
            cluster: request.cluster,
            op,
            client,
            principal,
            peer: request.peer,
        }
    }

    /// Counts and audits what the request came to: its `denied` topics
    /// (and cluster resources) by their deciding rule, with a `denied`
    /// line; and, when it goes through (`forwarded`) and is
    /// administrative, an `admin` line naming what it does.
    fn record(&self, denials: &Denials, denied: usize, forwarded: bool) {
        let cluster = self.cluster;
        for (op, rule, count) in denials.by_rule(self.op, denied) {
            cluster
                .metrics
                .policy_denied(op.name(), rule, self.principal, count);
        }
        let audit = |event, names: &Names, outcome| {
            let line = Line {
                event,
                principal: self.principal,
                client_id: self.client,
                peer: Some(self.peer),
                operation: self.op.name(),
                resources: names,
                outcome,
            };
            cluster.audit.write(cluster.name(), &line);
        };
        if denied > 0 {
            audit(Event::Denied, &denials.denied, "denied");
        }
        if forwarded && self.op.audited() && !denials.allowed.is_empty() {
            audit(Event::Admin, &denials.allowed, "forwarded");
        }
    }
}
