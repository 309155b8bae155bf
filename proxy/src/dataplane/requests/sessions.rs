//! Fetch sessions (KIP-227) under a topic policy that changes in place.
//!
//! A consumer in a session sends incremental Fetches naming only the
//! partitions that changed, and the broker answers for every partition of
//! the session: partitions the policy judged when a Fetch added them. So
//! each connection remembers the consume rules its client's last full
//! Fetch was judged by, and when an incremental Fetch would be judged by
//! rules that may decide otherwise, the proxy answers it itself with
//! INVALID_FETCH_SESSION_EPOCH: the client fetches in full again (no
//! error reaches the application), naming every partition, and the rules
//! in force judge (and split) that Fetch.
//!
//! What it costs: nothing while no policy looks at Fetch, before or after
//! (one field compared per Fetch); under a policy, the session's two
//! fields read from the first bytes of each Fetch (which the policy holds
//! whole anyway); a chain change that leaves the consume rules as they
//! were (another filter, rules of other operations) resets nothing.

use std::future::Future;
use std::sync::Arc;

use sluice_config::policy::Operation;
use sluice_kafka::frame::{RequestHeader, request_client_id};
use sluice_kafka::session::{FetchSession, fetch_session, session_reset};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{Request, Way};
use crate::dataplane::direction::{CHUNK, ConnError};
use crate::dataplane::splice::Splice;
use crate::filter::topic_policy::TopicPolicy;

/// Fetch's API key.
pub(super) const FETCH: i16 = 1;

/// What a connection knows of its client's Fetch session.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    /// The consume rules the last full Fetch was judged by: `None` when
    /// every topic was allowed to the client (no policy, or one open to it
    /// for consume). A new connection starts at `None`: a session it
    /// continues from another one is reset under any policy.
    judged: Option<Arc<TopicPolicy>>,
}

impl Sessions {
    /// Whether a Fetch to be judged by `now` (the policy that looks at
    /// Fetch, if any) needs its session read at all.
    pub(super) fn watching(&self, now: Option<&Arc<TopicPolicy>>) -> bool {
        self.judged.is_some() || now.is_some()
    }

    /// Takes a Fetch of `session` judged by `now` (the consume rules for
    /// this client, `None` when it may consume every topic); `session`
    /// unknown (unreadable) counts as incremental. True when the proxy
    /// must answer it with the session error.
    pub(super) fn on_fetch(
        &mut self,
        session: Option<FetchSession>,
        now: Option<Arc<TopicPolicy>>,
    ) -> bool {
        if !session.is_none_or(FetchSession::incremental) {
            // A full Fetch names every partition: `now` judges them all.
            self.judged = now;
            return false;
        }
        let same = match (&self.judged, &now) {
            (None, None) => true,
            (Some(was), Some(is)) => Arc::ptr_eq(was, is) || was.same_for(is, Operation::Consume),
            _ => false,
        };
        if same {
            // Compared once: the next Fetch finds the same rules.
            self.judged = now;
        }
        // Reset until the client fetches in full.
        !same
    }
}

impl<R, W, S> Way<'_, R, W, S>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
    S: Future<Output = ()> + Unpin,
{
    /// Whether the Fetch `header` (of `total` bytes), which `policy` looks
    /// at if any, continues a session the consume rules changed under:
    /// reads its first bytes (nearly always in the buffer already).
    pub(super) async fn session_changed(
        &mut self,
        header: &RequestHeader,
        total: usize,
        policy: Option<&Arc<TopicPolicy>>,
        sessions: &mut Sessions,
    ) -> Result<bool, ConnError> {
        let version = header.api_version;
        loop {
            let unread = self.buf.unread();
            let session = fetch_session(unread, version);
            if let (Some(session), Some(client)) = (session, request_client_id(unread)) {
                let client = client.unwrap_or_default();
                let now = policy
                    .filter(|p| !p.open_for(Operation::Consume, &client))
                    .cloned();
                return Ok(sessions.on_fetch(Some(session), now));
            }
            if unread.len() >= total.min(CHUNK) {
                // Not readable within a chunk (header tags of kilobytes):
                // taken as incremental, judged by the strictest reading.
                let now = policy.cloned();
                return Ok(sessions.on_fetch(None, now));
            }
            if self.buf.read_more(self.rd, self.wr, self.clock).await? == 0 {
                return Err(ConnError::ClosedMidFrame);
            }
        }
    }

    /// Answers an incremental Fetch whose session must start again with
    /// INVALID_FETCH_SESSION_EPOCH; nothing of it goes upstream. True when
    /// the generation drained before it had a slot.
    pub(super) async fn reset_session(self, request: Request<'_>) -> Result<bool, ConnError> {
        let cluster = request.cluster;
        let answer = session_reset(&request.header)?;
        cluster.metrics.fetch_session_reset();
        tracing::debug!(cluster = %cluster.name(), "fetch session reset: the consume rules changed");
        self.answer(request, answer).await
    }
}

#[cfg(test)]
mod tests {
    use sluice_config::policy::{Combine, Effect, Pattern, Rule};

    use super::*;

    fn policy(deny_consume: &str, deny_produce: &str) -> Arc<TopicPolicy> {
        let rule = |op, topic| Rule {
            effect: Effect::Deny,
            operations: [op].into_iter().collect(),
            topics: vec![Pattern::new(topic)],
            client_ids: None,
        };
        Arc::new(TopicPolicy::new(sluice_config::policy::TopicPolicy {
            combine: Combine::First,
            default: Effect::Allow,
            rules: vec![
                rule(Operation::Consume, deny_consume),
                rule(Operation::Produce, deny_produce),
            ],
        }))
    }

    const FULL: Option<FetchSession> = Some(FetchSession { id: 0, epoch: 0 });
    const NEXT: Option<FetchSession> = Some(FetchSession { id: 7, epoch: 3 });

    #[test]
    fn an_incremental_fetch_is_reset_only_when_the_consume_rules_changed() {
        let mut s = Sessions::default();
        assert!(!s.watching(None), "no policy, before or after: not read");
        assert!(!s.on_fetch(FULL, None));
        assert!(!s.on_fetch(NEXT, None));

        let first = policy("b", "x");
        assert!(s.watching(Some(&first)));
        assert!(s.on_fetch(NEXT, Some(Arc::clone(&first))), "a policy added");
        assert!(
            s.on_fetch(NEXT, Some(Arc::clone(&first))),
            "until a full fetch"
        );
        assert!(!s.on_fetch(FULL, Some(Arc::clone(&first))));
        assert!(!s.on_fetch(NEXT, Some(Arc::clone(&first))));

        // Rebuilt by a reload, or changed for produce only: the same.
        assert!(!s.on_fetch(NEXT, Some(policy("b", "x"))));
        assert!(!s.on_fetch(NEXT, Some(policy("b", "y"))));

        assert!(s.on_fetch(NEXT, Some(policy("c", "y"))), "consume changed");
        assert!(!s.on_fetch(FULL, Some(policy("c", "y"))));
        assert!(s.watching(None), "judged by a policy: still read");
        assert!(s.on_fetch(NEXT, None), "the policy removed");
        assert!(s.on_fetch(None, None), "unreadable: incremental");
        assert!(!s.on_fetch(Some(FetchSession::NONE), None));
        assert!(!s.watching(None));
    }
}
