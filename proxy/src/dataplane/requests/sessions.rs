//! Fetch sessions (KIP-227) under a topic policy that changes in place.
//!
//! A consumer in a session sends incremental Fetches naming only the
//! partitions that changed, and the broker answers for every partition of
//! the session: partitions the policy judged when the full Fetch that
//! opened it named them. So the cluster remembers, per session id (the
//! one the full Fetch's response gave it: `FetchSessions`), the consume
//! rules that Fetch was judged by, and an incremental Fetch whose session
//! the cluster does not know, or knows opened under rules that may decide
//! otherwise, is answered by the proxy with INVALID_FETCH_SESSION_EPOCH
//! on whichever connection it comes: the client fetches in full again (no
//! error reaches the application), naming every partition, and the rules
//! in force judge (and split) that Fetch.
//!
//! What it costs: nothing while no policy looks at Fetch and no session
//! opened under one may continue (one atomic read per Fetch); otherwise
//! the session's two fields read from the first bytes of each Fetch
//! (which the policy holds whole anyway), a map look-up per incremental
//! Fetch, and the session id read from each full Fetch's response head.

use std::future::Future;
use std::sync::Arc;

use sluice_config::policy::{Client, Operation};
use sluice_kafka::frame::{RequestHeader, request_client_id};
use sluice_kafka::session::{FetchSession, fetch_response_session, fetch_session, session_reset};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{Request, Way};
use crate::dataplane::buffer::FrameBuf;
use crate::dataplane::cluster::ClusterRuntime;
use crate::dataplane::direction::{CHUNK, ConnError, FrameClock};
use crate::dataplane::held::response_head;
use crate::dataplane::splice::Splice;
use crate::filter::topic_policy::TopicPolicy;
use crate::metrics::{FetchSessions, Judged, Rules, who};

/// Fetch's API key.
pub(super) const FETCH: i16 = 1;

/// What becomes of a Fetch, as far as its session goes.
#[derive(Debug, Clone)]
pub(super) enum Session {
    /// Forwarded; nothing to learn from its response.
    Goes,
    /// Answered by the proxy: its session starts again.
    Reset,
    /// A full Fetch that opens a session, judged by these rules: the id
    /// its response gives is remembered with them.
    Opens(Judged),
}

impl Session {
    /// Whether the Fetch is answered with the session reset, and the rules
    /// to remember with the session its response opens, if any.
    pub(super) fn split(self) -> (bool, Option<Box<Judged>>) {
        match self {
            Session::Opens(rules) => (false, Some(Box::new(rules))),
            Session::Reset => (true, None),
            Session::Goes => (false, None),
        }
    }
}

/// Whether a Fetch to be judged by `now` (the policy that looks at Fetch,
/// if any) needs its session read at all.
pub(super) fn watching(sessions: &FetchSessions, now: Option<&Arc<TopicPolicy>>) -> bool {
    now.is_some() || sessions.policed()
}

/// Takes a Fetch of `session` judged by `now` (the consume rules for this
/// client, `None` when it may consume every topic); `session` unknown
/// (unreadable) counts as incremental.
pub(super) fn on_fetch(
    sessions: &FetchSessions,
    session: Option<FetchSession>,
    now: Judged,
) -> Session {
    let Some(session) = session else {
        return Session::Reset;
    };
    if session.incremental() {
        return if sessions.continues(session.id, now) {
            Session::Reset
        } else {
            Session::Goes
        };
    }
    // A full Fetch closes the session it names; epoch 0 opens another
    // (the broker gives its id), -1 fetches without one.
    if session.id != 0 {
        sessions.closed(session.id);
    }
    if session.epoch == 0 {
        Session::Opens(now)
    } else {
        Session::Goes
    }
}

/// Reads the head of the response to a full Fetch of `header` that opens
/// a session (`Session::Opens(rules)`), and remembers the session it gives
/// (if any) with `rules`, before any of it goes to the client: the client
/// cannot continue the session before it knows its id.
pub(in crate::dataplane) async fn learn_session<R, W>(
    rules: &Judged,
    header: &RequestHeader,
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
    let mut clock = FrameClock::unlimited();
    let total = response_head(header, max, buf, rd, wr, &mut clock).await?;
    let id = loop {
        let unread = buf.unread();
        if let Some(id) = fetch_response_session(unread, header.api_version) {
            break id;
        }
        if unread.len() >= total.min(CHUNK) {
            break 0;
        }
        if buf.read_more(rd, wr, &mut clock).await? == 0 {
            return Err(ConnError::ClosedMidFrame);
        }
    };
    cluster.metrics.fetch_sessions.opened(id, rules.clone());
    Ok(())
}

impl<R, W, S> Way<'_, R, W, S>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
    S: Future<Output = ()> + Unpin,
{
    /// What becomes of the Fetch `header` (of `total` bytes), which
    /// `policy` looks at if any, as far as its session goes: reads its
    /// first bytes (nearly always in the buffer already).
    pub(super) async fn session(
        &mut self,
        header: &RequestHeader,
        total: usize,
        policy: Option<&Arc<TopicPolicy>>,
        sessions: &FetchSessions,
        principal: Option<&str>,
    ) -> Result<Session, ConnError> {
        let version = header.api_version;
        loop {
            let unread = self.buf.unread();
            let session = fetch_session(unread, version);
            if let (Some(session), Some(client)) = (session, request_client_id(unread)) {
                let id = client.unwrap_or_default();
                let client = Client { id: &id, principal };
                let now = policy
                    .filter(|p| !p.open_for(Operation::Consume, client))
                    .map(|p| Rules {
                        policy: Arc::clone(p),
                        who: who(client),
                    });
                return Ok(on_fetch(sessions, Some(session), now));
            }
            if unread.len() >= total.min(CHUNK) {
                // Not readable within a chunk (header tags of kilobytes):
                // taken as incremental, judged by the strictest reading.
                return Ok(Session::Reset);
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
        tracing::debug!(cluster = %cluster.name(), "fetch session reset: unknown, or opened under other consume rules");
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
            ..Rule::default()
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

    /// `policy` judging client `app`.
    fn rules(policy: Option<Arc<TopicPolicy>>) -> Judged {
        let who = who(Client::by_id("app"));
        policy.map(|policy| Rules { policy, who })
    }

    const FULL: Option<FetchSession> = Some(FetchSession { id: 0, epoch: 0 });
    const NEXT: Option<FetchSession> = Some(FetchSession { id: 7, epoch: 3 });

    /// What `on_fetch` said: "goes", "reset", or "opens" with whether
    /// under a policy.
    fn said(s: Session) -> &'static str {
        match s {
            Session::Goes => "goes",
            Session::Reset => "reset",
            Session::Opens(None) => "opens",
            Session::Opens(Some(_)) => "opens policed",
        }
    }

    #[test]
    fn an_incremental_fetch_goes_on_only_in_a_session_opened_under_its_rules() {
        let s = FetchSessions::default();
        let on = |session, now: Option<Arc<TopicPolicy>>| said(on_fetch(&s, session, rules(now)));
        assert!(!watching(&s, None), "no policy, before or after: not read");
        let first = policy("b", "x");
        assert!(watching(&s, Some(&first)));
        assert_eq!(on(NEXT, Some(Arc::clone(&first))), "reset", "unknown");
        assert_eq!(on(FULL, Some(Arc::clone(&first))), "opens policed");
        // Its response gave it id 7.
        s.opened(7, rules(Some(Arc::clone(&first))));
        assert!(watching(&s, None), "opened under a policy: still read");
        assert_eq!(on(NEXT, Some(Arc::clone(&first))), "goes");
        // Rebuilt by a reload, or changed for produce only: the same.
        assert_eq!(on(NEXT, Some(policy("b", "x"))), "goes");
        assert_eq!(on(NEXT, Some(policy("b", "y"))), "goes");
        assert_eq!(on(NEXT, Some(policy("c", "y"))), "reset", "consume changed");
        assert_eq!(
            on(NEXT, Some(policy("b", "x"))),
            "reset",
            "until a full fetch"
        );

        // Opened again (same id, epoch 0) under the new rules, given id 8,
        // then the policy removed: the session starts again once more.
        let again = Some(FetchSession { id: 7, epoch: 0 });
        assert_eq!(on(again, Some(policy("c", "y"))), "opens policed");
        s.opened(8, rules(Some(policy("c", "y"))));
        assert_eq!(on(Some(FetchSession { id: 8, epoch: 1 }), None), "reset");
        assert!(!watching(&s, None), "no session of a policy left: not read");
        assert_eq!(on(None, None), "reset", "unreadable: incremental");
        assert_eq!(on(FULL, None), "opens");
        let sessionless = Some(FetchSession { id: 9, epoch: -1 });
        assert_eq!(on(sessionless, None), "goes");
        assert_eq!(on(Some(FetchSession::NONE), None), "goes");
    }

    #[test]
    fn a_session_is_continued_by_the_client_that_opened_it_only() {
        let s = FetchSessions::default();
        let policy = policy("b", "x");
        let judged = |id, principal| {
            let who = who(Client { id, principal });
            Some(Rules {
                policy: Arc::clone(&policy),
                who,
            })
        };
        let on = |now| said(on_fetch(&s, NEXT, now));
        s.opened(7, judged("app", Some("alice")));
        assert_eq!(on(judged("app", Some("bob"))), "reset", "another principal");
        assert_eq!(on(judged("other", Some("alice"))), "reset", "another id");
        assert_eq!(on(judged("app", None)), "reset", "no principal");
        assert_eq!(
            on(judged("app", Some("alice"))),
            "goes",
            "still its opener's"
        );
    }
}
