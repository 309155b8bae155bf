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

    /// Runs `wait`, beating every few seconds until it ends: a long wait
    /// (this pod's turn, the gate) is progress, not a stuck loop.
    pub async fn beating_while<F: std::future::Future>(&self, wait: F) -> F::Output {
        tokio::pin!(wait);
        let mut beat = tokio::time::interval(std::time::Duration::from_secs(5));
        loop {
            tokio::select! {
                out = &mut wait => return out,
                _ = beat.tick() => self.beat(),
            }
        }
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
