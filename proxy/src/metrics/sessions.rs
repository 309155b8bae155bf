//! The fetch sessions of a virtual cluster (KIP-227) and the consume rules
//! each was opened under: kept per cluster name beside its metrics, so
//! every generation (and every filter chain) of the cluster shares them,
//! like the topic id map.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use sluice_kafka::session::SessionBook;

use crate::filter::topic_policy::TopicPolicy;

/// The consume rules a Fetch was judged by for its client: `None` when it
/// may consume every topic (no policy, or one open to it).
pub(crate) type Judged = Option<Arc<TopicPolicy>>;

/// A cluster's fetch sessions by id.
#[derive(Debug, Default)]
pub(crate) struct FetchSessions {
    book: Mutex<SessionBook<Arc<TopicPolicy>>>,
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
    /// it must start again.
    pub(crate) fn continues(&self, id: i32, now: Judged) -> bool {
        self.with(|b| {
            b.continues(id, now, |was, is| {
                Arc::ptr_eq(was, is) || was.same_for(is, sluice_config::policy::Operation::Consume)
            })
        })
    }

    fn with<T>(&self, f: impl FnOnce(&mut SessionBook<Arc<TopicPolicy>>) -> T) -> T {
        let mut book = self.lock();
        let out = f(&mut book);
        self.policed.store(book.policed(), Ordering::Release);
        out
    }

    fn lock(&self) -> MutexGuard<'_, SessionBook<Arc<TopicPolicy>>> {
        self.book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
