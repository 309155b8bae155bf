//! After an apply, with peers: following the proxy's client-side analysis
//! of what it applied (a regression halts the rollout here).

use super::{Content, Kind, Passes, Trigger, event, version};
use crate::fleet::follow::{AfterApply, after_apply};

impl Passes {
    /// With peers: follows its proxy's client-side analysis of `content`
    /// (`found`: in force already, not applied now); a regression halts the
    /// rollout here. Returns newer content to take at once, if any.
    pub(super) async fn follow(
        &mut self,
        content: &Content,
        found: bool,
    ) -> Option<(Content, Trigger)> {
        let (Some(rollout), Some(config)) = (&mut self.rollout, &content.digest) else {
            return None;
        };
        let tools = (&self.client, &*self.metrics, &*self.heartbeat);
        let (rx, memory) = (&mut self.rx, &mut self.memory);
        match after_apply(rollout, tools, rx, memory, config, found).await {
            AfterApply::Done => None,
            AfterApply::Halted(message) => {
                let events = self.events.as_ref();
                event(events, Kind::Warning, "ClientCheckFailed", message);
                None
            }
            AfterApply::Superseded(c) => {
                self.metrics.swap_seen(version(&c), c.data_dir.as_deref());
                Some((c, Trigger::Config))
            }
        }
    }
}
