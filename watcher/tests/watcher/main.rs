//! The watcher library's integration tests, one binary: Kubernetes Events
//! against a recorded API-server interaction, and the per-pod wait with
//! paused time, and `apply` against a real proxy when files change after
//! the rollout gate opened. The watcher as a process, with the real proxy, is tested in
//! `tests/e2e` (`watcher` module). `token`: the admin token against a
//! stand-in proxy (never on status reads; re-read after a 401). `follow`:
//! the client-side analysis followed after an apply, against a stand-in.

mod events;
mod follow;
mod regate;
mod schedule;
mod token;
