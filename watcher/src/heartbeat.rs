//! Liveness: the watch loop stamps the heartbeat whenever it wakes, and
//! while it waits at the rollout gate, so `/healthz` tells a stuck loop
//! from one that is waiting its turn.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// Liveness: the loop stamps this whenever it wakes.
#[derive(Debug, Default)]
pub struct Heartbeat(AtomicU64);

impl Heartbeat {
    /// Records that the loop is alive (it woke, or waits at the gate).
    pub fn beat(&self) {
        self.0.store(now_secs(), Ordering::Release);
    }

    /// Seconds since the loop last woke.
    pub fn age(&self) -> u64 {
        now_secs().saturating_sub(self.0.load(Ordering::Acquire))
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
