//! Draining a generation: no new connections, each open one ends at its next
//! request boundary (closes spread over a short window), whatever is left is
//! closed at `drainTimeout`; then the generation is stopped.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::prepare::transition;
use super::{Engine, Generation};
use crate::lifecycle::Event;
use sluice_admin_api::ClusterState;

/// The window draining connections spread their closes over: a quarter of
/// the drain timeout, at most one second.
pub(super) fn spread(timeout: Duration) -> Duration {
    (timeout / 4).min(Duration::from_secs(1))
}

impl Engine {
    /// Moves a generation to draining and ends its connections in the
    /// background. A generation without a runtime (failed) has nothing to
    /// drain: it is forgotten.
    pub(super) fn drain(
        self: &Arc<Self>,
        name: &str,
        mut generation: Generation,
        timeout: Duration,
    ) {
        let Some(runtime) = generation.runtime.clone() else {
            self.events
                .forget(name, generation.generation, generation.state);
            return;
        };
        let name = name.to_owned();
        let number = generation.generation;
        let to = transition(generation.state, Event::Drain);
        self.events
            .transition(&name, number, Some(generation.state), to, None);
        generation.state = to;
        generation.since = SystemTime::now();
        self.lock().draining.push(generation);
        runtime.begin_drain(spread(timeout));
        let engine = Arc::clone(self);
        self.tracker.spawn(async move {
            let start = Instant::now();
            let clean = tokio::time::timeout(timeout, runtime.connections.wait())
                .await
                .is_ok();
            if !clean {
                runtime.force.set();
                runtime.connections.wait().await;
            }
            engine
                .events
                .drained(&name, number, start.elapsed(), !clean);
            engine.lock().draining.retain(|d| {
                !(d.generation == number && d.runtime.as_ref().is_some_and(|r| r.name() == name))
            });
            let stopped = transition(ClusterState::Draining, Event::Drained);
            engine
                .events
                .transition(&name, number, Some(ClusterState::Draining), stopped, None);
        });
    }
}
