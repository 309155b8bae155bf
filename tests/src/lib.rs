//! Helpers for the end-to-end tests: real binaries, real Kafka peers, real
//! clients. The binaries are built by `scripts/test` (`cargo build
//! --workspace --bins`) and the peers installed by `scripts/install-test-deps`
//! before the tests run.
//!
//! - [`process`]: child processes awaited by what they print, killed on drop
//! - [`ports`]: free loopback ports
//! - [`peers`]: the tansu broker and librdkafka's mock cluster
//! - [`proxy`]: a `sluice-proxy run` process
//! - [`python`]: the Python Kafka clients in `tests/clients`
//! - [`certs`]: certificates made per test run
//! - [`config`]: proxy configurations for tests
//! - [`http`]: a tiny HTTP client for the admin API
//! - [`kafka`]: a minimal synchronous Kafka client for raw-protocol tests
//! - [`manifests`]: the Kubernetes manifests, rendered and parsed
//! - [`sockets`]: the kernel's view of who is connected to whom
//! - [`volume`]: a ConfigMap volume written the way kubelet writes it
//! - [`watcher`]: a `sluice-watcher` process

use std::path::{Path, PathBuf};

pub mod certs;
pub mod config;
pub mod http;
pub mod kafka;
pub mod manifests;
pub mod peers;
pub mod ports;
pub mod process;
pub mod proxy;
pub mod python;
pub mod sockets;
pub mod volume;
pub mod watcher;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repository")
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

/// The invalid-configuration corpus: each file with its expected errors
/// (`line:column: path: message`, one per line).
pub fn invalid_corpus() -> Vec<(PathBuf, Vec<String>)> {
    let dir = repo().join("tests/fixtures/config/invalid");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let expected = std::fs::read_to_string(f.with_extension("expected"))
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (f, expected.lines().map(str::to_owned).collect())
        })
        .collect()
}
