//! The watcher library's integration tests, one binary: Kubernetes Events
//! against a recorded API-server interaction, and the per-pod wait with
//! paused time. The watcher as a process, with the real proxy, is tested in
//! `tests/e2e` (`watcher` module).

mod events;
mod schedule;
