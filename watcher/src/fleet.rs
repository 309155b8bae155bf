//! The fleet: every pod's watcher learns its peers (their proxies' admin
//! status), takes a slot that no other pod has, and applies a new version
//! only when the gate opens. Pure decisions here; the polling lives in the
//! run loop.
//!
//! - [`slots`]: a pod's slot is its instance's rank among its peers'
//! - [`gate`]: whether this pod may apply a version now, must wait, or halts
//! - [`peers`]: the peers' URLs and their last statuses
//! - [`rollout`]: waiting at the gate
//! - [`follow`]: after applying, following this pod's proxy's client-side
//!   analysis of the version until its verdict (a regression halts)
//! - [`view`]: `sluice-watcher fleet`, one line per pod
//! - [`start`]: which version a proxy started held serves (a peer's last
//!   good one while a rollout is halted)

pub mod follow;
pub mod gate;
pub mod peers;
pub mod rollout;
pub mod slots;
pub mod start;
pub mod view;
