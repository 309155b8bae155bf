//! The lifecycle of one virtual-cluster generation, as a pure state machine.
//!
//! ```text
//! initializing ──► accepting ──► draining ──► stopped
//!       │
//!       └────────► failed
//! ```
//!
//! A reload never edits a running generation: it prepares a new one and
//! drains the old. Invalid transitions are bugs, refused by [`State::on`].

use std::fmt;

/// Where a generation is in its life. (`GET /admin/clusters` shows it as
/// `sluice-admin-api`'s `ClusterState`, the same names.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum State {
    /// Being prepared: filters built, TLS loaded, listeners bound. Serves nothing yet.
    Initializing,
    /// Routed: new connections on its ports come to it. Says nothing about upstream health.
    Accepting,
    /// Replaced or removed: takes no new connections; open ones end at their
    /// next request boundary or at `drainTimeout`.
    Draining,
    /// Every connection is gone and its resources are released. Terminal.
    Stopped,
    /// Preparing failed; whatever was prepared is released. Terminal for this
    /// generation; a retry is a new generation.
    Failed,
}

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
    pub(crate) from: State,
    /// The event that was refused.
    pub(crate) event: Event,
}

impl State {
    /// The state after `event`, or the refusal.
    pub(crate) fn on(self, event: Event) -> Result<State, InvalidTransition> {
        use Event::*;
        use State::*;
        match (self, event) {
            (Initializing, Committed) => Ok(Accepting),
            (Initializing, PrepareFailed) => Ok(Failed),
            (Accepting, Drain) => Ok(Draining),
            (Draining, Drained) => Ok(Stopped),
            (from, event) => Err(InvalidTransition { from, event }),
        }
    }

    /// Every state, for tests that go through them all.
    #[cfg(test)]
    pub(crate) const ALL: [State; 5] = [
        State::Initializing,
        State::Accepting,
        State::Draining,
        State::Stopped,
        State::Failed,
    ];

    /// The state's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Initializing => "initializing",
            State::Accepting => "accepting",
            State::Draining => "draining",
            State::Stopped => "stopped",
            State::Failed => "failed",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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
        let s = State::Initializing.on(Event::Committed).unwrap();
        assert_eq!(s, State::Accepting);
        let s = s.on(Event::Drain).unwrap();
        assert_eq!(s, State::Draining);
        assert_eq!(s.on(Event::Drained).unwrap(), State::Stopped);
        assert_eq!(
            State::Initializing.on(Event::PrepareFailed).unwrap(),
            State::Failed
        );
    }

    #[test]
    fn exactly_four_transitions_are_allowed() {
        let allowed: Vec<(State, Event)> = State::ALL
            .iter()
            .flat_map(|s| EVENTS.iter().map(move |e| (*s, *e)))
            .filter(|(s, e)| s.on(*e).is_ok())
            .collect();
        assert_eq!(
            allowed,
            [
                (State::Initializing, Event::Committed),
                (State::Initializing, Event::PrepareFailed),
                (State::Accepting, Event::Drain),
                (State::Draining, Event::Drained),
            ]
        );
    }

    #[test]
    fn terminal_states_refuse_everything() {
        for terminal in [State::Stopped, State::Failed] {
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
