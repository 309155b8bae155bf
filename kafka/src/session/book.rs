//! Which consume rules each fetch session was opened under, per virtual
//! cluster: a session is known by the id its opening full Fetch's
//! response gave it, on whichever connection it continues. Bounded: past
//! [`SessionBook::CAPACITY`] sessions the oldest is forgotten (and reset
//! at its next incremental Fetch, like any session the book does not know).

use std::collections::{HashMap, VecDeque};

/// Sessions by id, each with the rules (`R`, `None`: every topic allowed)
/// its opening full Fetch was judged by.
#[derive(Debug)]
pub struct SessionBook<R> {
    sessions: HashMap<i32, (Option<R>, u64)>,
    /// Ids in the order they were opened, with the opening's number (an id
    /// opened again or closed leaves a stale entry, skipped).
    order: VecDeque<(i32, u64)>,
    next: u64,
    /// Sessions opened under a policy (`Some` rules).
    policed: usize,
    capacity: usize,
}

impl<R> Default for SessionBook<R> {
    fn default() -> Self {
        Self::with_capacity(Self::CAPACITY)
    }
}

impl<R> SessionBook<R> {
    /// Sessions remembered per cluster.
    pub const CAPACITY: usize = 100_000;

    /// A book of at most `capacity` sessions.
    pub fn with_capacity(capacity: usize) -> Self {
        SessionBook {
            sessions: HashMap::new(),
            order: VecDeque::new(),
            next: 0,
            policed: 0,
            capacity: capacity.max(1),
        }
    }

    /// Whether a session opened under a policy may still continue: while
    /// one may, every Fetch is watched even with no policy in force.
    pub fn policed(&self) -> bool {
        self.policed > 0
    }

    /// Sessions remembered.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// The rules session `id` was opened under (`Some(None)`: none), if
    /// it is remembered.
    pub fn get(&self, id: i32) -> Option<&Option<R>> {
        self.sessions.get(&id).map(|(rules, _)| rules)
    }

    /// Session `id` (0: none) was opened by a full Fetch judged by `rules`.
    pub fn opened(&mut self, id: i32, rules: Option<R>) {
        if id == 0 {
            return;
        }
        self.closed(id);
        self.next += 1;
        self.policed += usize::from(rules.is_some());
        self.sessions.insert(id, (rules, self.next));
        self.order.push_back((id, self.next));
        while self.sessions.len() > self.capacity {
            self.forget_oldest();
        }
        if self.order.len() > 2 * self.capacity {
            let live = &self.sessions;
            self.order
                .retain(|(id, n)| live.get(id).is_some_and(|(_, m)| m == n));
        }
    }

    /// Session `id` ends (a full Fetch closes it, or it was reset).
    pub fn closed(&mut self, id: i32) {
        if let Some((rules, _)) = self.sessions.remove(&id) {
            self.policed -= usize::from(rules.is_some());
        }
    }

    /// An incremental Fetch continues session `id` under `now`: true when
    /// it must start again (unknown, or opened under rules that `same`
    /// says may decide otherwise), and then it is forgotten. Rules found
    /// the same replace those remembered (compared once).
    pub fn continues(&mut self, id: i32, now: Option<R>, same: impl Fn(&R, &R) -> bool) -> bool {
        let Some((was, _)) = self.sessions.get_mut(&id) else {
            return true;
        };
        let kept = match (&*was, &now) {
            (None, None) => true,
            (Some(a), Some(b)) => same(a, b),
            _ => false,
        };
        if kept {
            *was = now;
            return false;
        }
        self.closed(id);
        true
    }

    fn forget_oldest(&mut self) {
        while let Some((id, n)) = self.order.pop_front() {
            if self.sessions.get(&id).is_some_and(|(_, m)| *m == n) {
                self.closed(id);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &&str, b: &&str) -> bool {
        a == b
    }

    #[test]
    fn a_session_continues_only_under_the_rules_it_was_opened_under() {
        let mut book = SessionBook::default();
        assert!(book.continues(7, None, same), "unknown: reset");
        book.opened(7, Some("r1"));
        book.opened(8, None);
        book.opened(0, Some("r1"));
        assert_eq!(book.len(), 2, "id 0 is no session");
        assert!(book.policed());
        assert!(!book.continues(7, Some("r1"), same));
        assert!(!book.continues(8, None, same));
        assert!(book.continues(7, Some("r2"), same), "the rules changed");
        assert!(book.continues(7, Some("r1"), same), "forgotten once reset");
        assert!(!book.policed(), "8 was opened with every topic allowed");
        assert!(book.continues(8, Some("r2"), same), "a policy added");
        assert!(book.is_empty());
        book.opened(9, Some("r1"));
        book.closed(9);
        assert!(!book.policed());
        assert!(
            book.continues(9, Some("r1"), same),
            "closed by a full Fetch"
        );
    }

    #[test]
    fn past_its_capacity_the_oldest_session_is_forgotten() {
        let mut book = SessionBook::with_capacity(3);
        for id in 1..=3 {
            book.opened(id, Some("r"));
        }
        // Opened again: now the newest.
        book.opened(1, Some("r"));
        book.opened(4, Some("r"));
        assert_eq!(book.len(), 3);
        assert!(book.continues(2, Some("r"), same), "the oldest, forgotten");
        for id in [1, 3, 4] {
            assert!(!book.continues(id, Some("r"), same), "{id}");
        }
        // Churn keeps its order list bounded too.
        for id in 0..1000 {
            book.opened(id % 5 + 10, None);
        }
        assert_eq!(book.len(), 3);
        assert!(book.order.len() <= 6);
        assert!(!book.policed());
    }
}
