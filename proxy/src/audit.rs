//! The data plane's audit: one structured line per failed authentication,
//! per refusal, and per administrative request that goes through (topics
//! created, deleted, altered, their records deleted, configs, groups
//! deleted, ACLs, quotas, brokers), on the admin audit's target
//! (`sluice_proxy::audit`, message `data plane`), so one log filter keeps
//! both. Fields: `cluster`, `event` (`authentication`, `denied`,
//! `admin`), `principal` (`""` without one), `client_id`, `peer`,
//! `operation`, `resources` (the first [`MAX_NAMED`] names, then how many
//! more), `outcome`, `suppressed`.
//!
//! Bounded per event: a burst of [`BURST`] lines, then [`PER_SECOND`] a
//! second; the lines not written are counted in the next one's
//! `suppressed`, so a client looping on a denied request cannot flood the
//! log.

use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Lines written at once per event before the rate applies.
const BURST: f64 = 100.0;
/// Lines per second per event after the burst.
const PER_SECOND: f64 = 10.0;
/// Resource names written per line.
pub(crate) const MAX_NAMED: usize = 20;

/// What a line is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A client failed to authenticate, or its principal was revoked.
    Authentication,
    /// A request, or part of one, refused by a filter.
    Denied,
    /// An administrative request forwarded.
    Admin,
}

impl Event {
    const ALL: [Event; 3] = [Event::Authentication, Event::Denied, Event::Admin];

    fn name(self) -> &'static str {
        match self {
            Event::Authentication => "authentication",
            Event::Denied => "denied",
            Event::Admin => "admin",
        }
    }
}

/// One line's fields.
#[derive(Debug)]
pub(crate) struct Line<'a> {
    pub(crate) event: Event,
    pub(crate) principal: Option<&'a str>,
    pub(crate) client_id: &'a str,
    pub(crate) peer: Option<IpAddr>,
    pub(crate) operation: &'a str,
    pub(crate) resources: &'a Names,
    pub(crate) outcome: &'a str,
}

/// Resource names, the first [`MAX_NAMED`] kept, the rest counted.
#[derive(Debug, Default, Clone)]
pub(crate) struct Names {
    names: Vec<String>,
    more: usize,
}

impl Names {
    /// Adds `name`.
    pub(crate) fn push(&mut self, name: &str) {
        if self.names.len() < MAX_NAMED {
            self.names.push(name.escape_debug().to_string());
        } else {
            self.more += 1;
        }
    }

    /// Whether there is none.
    pub(crate) fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub(crate) fn written(&self) -> String {
        let mut out = self.names.join(",");
        if self.more > 0 {
            out.push_str(&format!(" (+{} more)", self.more));
        }
        out
    }
}

/// A cluster's audit lines, bounded per event.
#[derive(Debug)]
pub(crate) struct Audit {
    buckets: [Mutex<Bucket>; Event::ALL.len()],
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
    suppressed: u64,
}

impl Default for Audit {
    fn default() -> Self {
        let now = Instant::now();
        Audit {
            buckets: Event::ALL.map(|_| {
                Mutex::new(Bucket {
                    tokens: BURST,
                    at: now,
                    suppressed: 0,
                })
            }),
        }
    }
}

impl Audit {
    /// Writes `line` for cluster `cluster`, unless its event is over its
    /// rate (then it is counted for the next).
    pub(crate) fn write(&self, cluster: &str, line: &Line<'_>) {
        let Some(suppressed) = self.admit(line.event, Instant::now()) else {
            return;
        };
        tracing::info!(
            target: "sluice_proxy::audit",
            cluster,
            event = line.event.name(),
            principal = line.principal.unwrap_or(""),
            client_id = %line.client_id.escape_debug(),
            peer = %line.peer.map_or_else(String::new, |p| p.to_string()),
            operation = line.operation,
            resources = %line.resources.written(),
            outcome = line.outcome,
            suppressed,
            "data plane"
        );
    }

    /// `Some(lines not written since the last)` when a line of `event` may
    /// be written at `now`.
    fn admit(&self, event: Event, now: Instant) -> Option<u64> {
        let i = Event::ALL.iter().position(|e| *e == event)?;
        let mut b = self.buckets[i]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let refill = now.duration_since(b.at).as_secs_f64() * PER_SECOND;
        b.tokens = (b.tokens + refill).min(BURST);
        b.at = now;
        if b.tokens < 1.0 {
            b.suppressed += 1;
            return None;
        }
        b.tokens -= 1.0;
        Some(std::mem::take(&mut b.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn each_event_has_a_burst_then_a_rate_and_the_next_line_counts_the_rest() {
        let audit = Audit::default();
        let t = Instant::now();
        for _ in 0..BURST as usize {
            assert_eq!(audit.admit(Event::Denied, t), Some(0));
        }
        for _ in 0..7 {
            assert_eq!(audit.admit(Event::Denied, t), None);
        }
        assert_eq!(audit.admit(Event::Admin, t), Some(0), "its own bucket");
        let later = t + Duration::from_millis(100);
        assert_eq!(audit.admit(Event::Denied, later), Some(7));
        assert_eq!(audit.admit(Event::Denied, later), None);
    }

    #[test]
    fn names_are_bounded_and_escaped() {
        let mut names = Names::default();
        for i in 0..MAX_NAMED + 3 {
            names.push(&format!("t{i}"));
        }
        assert!(names.written().ends_with(",t19 (+3 more)"));
        let mut escaped = Names::default();
        escaped.push("a\nb");
        assert_eq!(escaped.written(), "a\\nb");
    }
}
