//! The test kit: what the tests of every crate need, written once. It holds
//! no Kafka wire format and no proxy internals, so any crate (the webhook's
//! included) can take it as a dev-dependency; the Kafka peers and clients of
//! the end-to-end tests live in `tests/` (`sluice-tests`).
//!
//! - [`ports`]: free loopback ports, reserved across test processes
//! - [`process`]: child processes awaited by what they print, killed on drop
//! - [`certs`]: a test CA and the certificates it signs
//! - [`corpus`]: the configuration fixtures (`tests/fixtures/config`)
//! - [`config`]: configurations the watcher tests reload, and their version
//! - [`http`]: a tiny HTTP client for the admin API and metrics
//! - [`jwt`]: a bearer-token issuer: its key set and signed JWTs
//! - [`logs`]: log lines captured while a test runs
//! - [`volume`]: a ConfigMap or Secret volume written the way kubelet writes it
//! - [`proxy`]: a `sluice-proxy run` process
//! - [`watcher`]: a `sluice-watcher` process
//! - [`rig`]: a proxy, the volume it is configured from and a watcher between
//! - [`netns`]: test hosts ("pods") in network namespaces of the test's own

use std::path::{Path, PathBuf};

pub mod certs;
pub mod config;
pub mod corpus;
pub mod http;
pub mod jwt;
pub mod logs;
pub mod netns;
pub mod ports;
pub mod process;
pub mod proxy;
pub mod rig;
pub mod volume;
pub mod watcher;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit/ sits in the repository")
        .to_path_buf()
}

/// A built binary of this workspace, e.g. `bin("sluice-proxy")`.
///
/// Looks in `$CARGO_TARGET_DIR` (or `target/`) under the profile the tests
/// were built with, and fails with a hint when it is missing.
pub fn bin(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"));
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let path = target.join(profile).join(name);
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace --bins` (scripts/test does)",
        path.display()
    );
    path
}
