//! `sluice-volume`: what the configuration crate, the watcher and the
//! webhook share, and nothing more, so that none depends on the proxy.
//!
//! - [`file`]: the one reader of referenced files: regular files only,
//!   bounded, confined to the roots the operator sets (no `watch` needed)
//! - [`version`]: the `sha256:` version of a configuration's bytes (also
//!   used by `sluice-config`, without the `watch` feature)
//! - [`watch`]: watching one file of a Kubernetes volume or a host for new
//!   content (feature `watch`, on by default)

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod file;
pub mod version;
#[cfg(feature = "watch")]
pub mod watch;

pub use file::{FileRoots, MAX_FILE_BYTES, ReadError, read_regular};
pub use version::{config_version, effective_version, sha256_hex};
#[cfg(feature = "watch")]
pub use watch::{Content, VolumeWatcher, WatchError, WatchOptions};
