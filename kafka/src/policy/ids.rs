//! Topic ids to names, learned from Metadata responses (v10 on, each topic
//! carries its id), so that a policy judges requests naming topics by id
//! only (Fetch v13 on) by the topic's name. Bounded: past [`MAX_TOPIC_IDS`]
//! the id learned first is forgotten (a client asking for it gets
//! UNKNOWN_TOPIC_ID, refreshes its metadata, and teaches it again).

use std::collections::{HashMap, VecDeque};
use std::sync::{PoisonError, RwLock};

pub use uuid::Uuid;

/// How many ids a cluster's map holds at most.
pub const MAX_TOPIC_IDS: usize = 100_000;

/// Kafka's UNKNOWN_TOPIC_ID: the client refreshes its metadata and retries.
pub const UNKNOWN_TOPIC_ID: i16 = 100;

/// One cluster's topic ids and their names, shared by its connections.
#[derive(Debug)]
pub struct TopicIds {
    max: usize,
    inner: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    names: HashMap<Uuid, String>,
    /// Ids in the order first learned: the front is forgotten first.
    order: VecDeque<Uuid>,
}

impl Default for TopicIds {
    fn default() -> Self {
        Self::with_capacity(MAX_TOPIC_IDS)
    }
}

impl TopicIds {
    /// A map holding at most `max` ids (at least one).
    pub fn with_capacity(max: usize) -> Self {
        TopicIds {
            max: max.max(1),
            inner: RwLock::new(Inner::default()),
        }
    }

    /// The name of the topic `id`, when learned.
    pub fn name(&self, id: Uuid) -> Option<String> {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        inner.names.get(&id).cloned()
    }

    /// How many ids are known.
    pub fn len(&self) -> usize {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        inner.names.len()
    }

    /// Whether no id is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Learns `(id, name)` pairs (nil ids and empty names are skipped).
    /// Takes the write lock only when something is new: the same Metadata
    /// answered again costs a read.
    pub fn learn(&self, topics: &[(Uuid, String)]) {
        // Most responses teach nothing (every Produce's): no lock for them.
        if topics.is_empty() {
            return;
        }
        let fresh = |inner: &Inner, (id, name): &&(Uuid, String)| {
            !id.is_nil() && !name.is_empty() && inner.names.get(id) != Some(name)
        };
        {
            let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
            if !topics.iter().any(|t| fresh(&inner, &t)) {
                return;
            }
        }
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        for (id, name) in topics {
            if id.is_nil() || name.is_empty() {
                continue;
            }
            if inner.names.insert(*id, name.clone()).is_none() {
                inner.order.push_back(*id);
            }
            while inner.names.len() > self.max {
                let Some(old) = inner.order.pop_front() else {
                    break;
                };
                inner.names.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn learns_names_and_skips_nil_ids_and_empty_names() {
        let ids = TopicIds::default();
        ids.learn(&[
            (id(1), "orders".into()),
            (Uuid::nil(), "nil".into()),
            (id(2), String::new()),
        ]);
        assert_eq!(ids.name(id(1)).as_deref(), Some("orders"));
        assert_eq!(ids.name(Uuid::nil()), None);
        assert_eq!(ids.name(id(2)), None);
        assert_eq!(ids.len(), 1);
    }

    #[test]
    fn is_bounded_forgetting_the_id_learned_first() {
        let ids = TopicIds::with_capacity(3);
        for n in 1..=3 {
            ids.learn(&[(id(n), format!("t{n}"))]);
        }
        // Learned again: still the oldest (first learned), and no growth.
        ids.learn(&[(id(1), "t1".into())]);
        assert_eq!(ids.len(), 3);
        ids.learn(&[(id(4), "t4".into())]);
        assert_eq!(ids.len(), 3);
        assert_eq!(ids.name(id(1)), None, "the first learned is forgotten");
        assert_eq!(ids.name(id(4)).as_deref(), Some("t4"));
        assert_eq!(ids.name(id(2)).as_deref(), Some("t2"));
        // One learn of more than the bound keeps only the last ones.
        let many: Vec<_> = (10..20).map(|n| (id(n), format!("t{n}"))).collect();
        ids.learn(&many);
        assert_eq!(ids.len(), 3);
        assert_eq!(ids.name(id(19)).as_deref(), Some("t19"));
        assert_eq!(ids.name(id(16)), None);
    }

    #[test]
    fn the_default_bound_is_a_hundred_thousand() {
        let ids = TopicIds::default();
        let many: Vec<_> = (1..=MAX_TOPIC_IDS as u128 + 5)
            .map(|n| (id(n), "t".to_owned()))
            .collect();
        ids.learn(&many);
        assert_eq!(ids.len(), MAX_TOPIC_IDS);
        assert_eq!(ids.name(id(5)), None);
        assert!(ids.name(id(6)).is_some());
    }
}
