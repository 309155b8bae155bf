//! What a connection keeps of the quota filter between its two directions:
//! until when its request side is muted, and what the response to a
//! metered request needs (`throttle` does the counting and the waiting).

use std::sync::{Arc, Mutex};

use sluice_config::filter::QuotaSpec;
use tokio::time::Instant;

use crate::quota::Client;

/// Until when a connection's request side does not read: set by either
/// direction, waited out by the request side between requests.
#[derive(Debug, Default)]
pub(super) struct Mute(Mutex<Option<Instant>>);

impl Mute {
    /// Keeps the connection muted until at least `until`.
    pub(super) fn extend(&self, until: Instant) {
        let mut at = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *at = Some(at.map_or(until, |t| t.max(until)));
    }

    /// The end of the mute, while it lasts.
    pub(super) fn until(&self, now: Instant) -> Option<Instant> {
        let at = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        at.filter(|t| *t > now)
    }
}

/// What the response to a metered request needs.
#[derive(Debug)]
pub(super) enum Metered {
    /// A Produce over its quota: the response carries the throttle time.
    Produce { throttle_ms: i32 },
    /// A Fetch under the quota: its response counts against the client's.
    Fetch {
        spec: QuotaSpec,
        client: Arc<Client>,
        mute: Arc<Mute>,
    },
}
