//! The lifecycle of one virtual-cluster generation, as a pure state machine.
//!
//! ```text
//! initializing ──► accepting ──► draining ──► stopped
//!       │
//!       └────────► failed
//! ```
//!
//! A reload never edits a running generation: it prepares a new one and
//! drains the old. Invalid transitions are bugs, refused by [`Lifecycle::on`].

use sluice_admin_api::ClusterState;

/// What happens to a generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// Preparing finished and the routing table now points at it.
    Committed,
    /// Preparing failed.
    PrepareFailed,
    /// A newer generation took over, or the cluster was removed, or the proxy is stopping.
    Drain,
    /// Its last connection closed (or was closed at the deadline).
    Drained,
}

/// An event that makes no sense in the current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid lifecycle transition: {event:?} in state {from}")]
pub(crate) struct InvalidTransition {
    /// The state the generation was in.
    pub(crate) from: ClusterState,
    /// The event that was refused.
    pub(crate) event: Event,
}

/// The pure step function of a generation's lifecycle, on the state the
/// admin API reports (one type: `GET /admin/clusters` shows exactly this).
pub(crate) trait Lifecycle: Sized {
    /// The state after `event`, or the refusal.
    fn on(self, event: Event) -> Result<Self, InvalidTransition>;
}

impl Lifecycle for ClusterState {
    fn on(self, event: Event) -> Result<ClusterState, InvalidTransition> {
        use ClusterState::*;
        use Event::*;
        match (self, event) {
            (Initializing, Committed) => Ok(Accepting),
            (Initializing, PrepareFailed) => Ok(Failed),
            (Accepting, Drain) => Ok(Draining),
            (Draining, Drained) => Ok(Stopped),
            (from, event) => Err(InvalidTransition { from, event }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENTS: [Event; 4] = [
        Event::Committed,
        Event::PrepareFailed,
        Event::Drain,
        Event::Drained,
    ];

    #[test]
    fn the_happy_path_and_the_failure_path() {
        let s = ClusterState::Initializing.on(Event::Committed).unwrap();
        assert_eq!(s, ClusterState::Accepting);
        let s = s.on(Event::Drain).unwrap();
        assert_eq!(s, ClusterState::Draining);
        assert_eq!(s.on(Event::Drained).unwrap(), ClusterState::Stopped);
        assert_eq!(
            ClusterState::Initializing.on(Event::PrepareFailed).unwrap(),
            ClusterState::Failed
        );
    }

    #[test]
    fn exactly_four_transitions_are_allowed() {
        let allowed: Vec<(ClusterState, Event)> = ClusterState::ALL
            .iter()
            .flat_map(|s| EVENTS.iter().map(move |e| (*s, *e)))
            .filter(|(s, e)| s.on(*e).is_ok())
            .collect();
        assert_eq!(
            allowed,
            [
                (ClusterState::Initializing, Event::Committed),
                (ClusterState::Initializing, Event::PrepareFailed),
                (ClusterState::Accepting, Event::Drain),
                (ClusterState::Draining, Event::Drained),
            ]
        );
    }

    #[test]
    fn terminal_states_refuse_everything() {
        for terminal in [ClusterState::Stopped, ClusterState::Failed] {
            for e in EVENTS {
                assert_eq!(
                    terminal.on(e),
                    Err(InvalidTransition {
                        from: terminal,
                        event: e
                    })
                );
            }
        }
    }
}
