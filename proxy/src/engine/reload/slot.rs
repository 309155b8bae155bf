//! The one-reload-at-a-time slot.

use sluice_admin_api::ReloadStage;

use crate::engine::Engine;

/// Holds the one-reload-at-a-time slot and says which step the reload is
/// at; frees the slot and wakes whoever waits for it when dropped.
pub(super) struct Slot<'a>(pub(super) &'a Engine);

impl Slot<'_> {
    pub(super) fn at(&self, stage: ReloadStage) {
        if let Some((_, s)) = self.0.running().as_mut() {
            *s = stage;
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.running() = None;
        self.0.reload_ended.notify_waiters();
    }
}
