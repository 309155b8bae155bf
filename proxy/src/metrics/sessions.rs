//! The fetch sessions of a virtual cluster (KIP-227) and the consume rules
//! each was opened under: kept per cluster name beside its metrics, so
//! every generation (and every filter chain) of the cluster shares them,
//! like the topic id map.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use sluice_config::policy::Client;

use sluice_kafka::session::SessionBook;

use crate::filter::topic_policy::TopicPolicy;

/// The consume rules a Fetch was judged by for its client: `None` when it
/// may consume every topic (no policy, or one open to it).
pub(crate) type Judged = Option<Rules>;

/// Consume rules, and whom they judged: a session opened by one client is
/// continued under them by that client only (by its client id and
/// principal), as a broker authorises every partition of a session for the
/// principal of each Fetch.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    pub(crate) policy: Arc<TopicPolicy>,
    /// [`who`] of the client judged.
    pub(crate) who: u64,
}

/// A client as a number: its client id and principal hashed with a key
/// of this process's (random), so that a session's entry costs the same
/// whatever its client writes, and no client can choose another's number.
pub(crate) fn who(client: Client<'_>) -> u64 {
    static KEY: OnceLock<RandomState> = OnceLock::new();
    KEY.get_or_init(RandomState::new).hash_one(client)
}

/// A cluster's fetch sessions by id.
#[derive(Debug, Default)]
pub(crate) struct FetchSessions {
    book: Mutex<SessionBook<Rules>>,
    /// Whether a session opened under a policy may still continue, read
    /// without the lock: while none may and no policy looks at Fetch, a
    /// Fetch's session is not even read.
    policed: AtomicBool,
}

impl FetchSessions {
    /// Whether Fetches must be watched though no policy looks at them.
    pub(crate) fn policed(&self) -> bool {
        self.policed.load(Ordering::Acquire)
    }

    /// Session `id` was opened by a full Fetch judged by `rules`.
    pub(crate) fn opened(&self, id: i32, rules: Judged) {
        self.with(|b| b.opened(id, rules));
    }

    /// Session `id` ends: a full Fetch closes it.
    pub(crate) fn closed(&self, id: i32) {
        self.with(|b| b.closed(id));
    }

    /// An incremental Fetch continues session `id` under `now`: true when
    /// it must start again. One from another client than the session's is
    /// answered so, and the session stays its opener's.
    pub(crate) fn continues(&self, id: i32, now: Judged) -> bool {
        self.with(|b| {
            if let (Some(Some(was)), Some(is)) = (b.get(id), &now)
                && was.who != is.who
            {
                return true;
            }
            b.continues(id, now, |was, is| {
                let consume = sluice_config::policy::Operation::Consume;
                Arc::ptr_eq(&was.policy, &is.policy) || was.policy.same_for(&is.policy, consume)
            })
        })
    }

    fn with<T>(&self, f: impl FnOnce(&mut SessionBook<Rules>) -> T) -> T {
        let mut book = self.lock();
        let out = f(&mut book);
        self.policed.store(book.policed(), Ordering::Release);
        out
    }

    fn lock(&self) -> MutexGuard<'_, SessionBook<Rules>> {
        self.book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
