//! A data plane held at startup (`run --hold`): the proxy reads and
//! validates its file, binds every port and prepares every cluster as
//! always, but closes each client connection as it comes, until something
//! says which version to serve. That is a watcher's call: a pod started
//! while its fleet holds a rollout halted must not serve the halted version
//! its volume may hold. Three things release it, whichever comes first:
//!
//! - a reload that applies (any version: the watcher reloaded the fleet's
//!   last good version), see [`Engine::release_after`];
//! - `POST /admin/config/release` (the watcher chose the version held);
//! - the `--hold` timeout (no watcher decided: the file's version serves).

use std::time::Duration;

use super::{Engine, ReloadOutcome};

/// What released a held data plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// `POST /admin/config/release`.
    Endpoint,
    /// A reload applied a version (through the admin API or SIGHUP).
    Reload,
    /// The `--hold` timeout passed with nothing else releasing it.
    Timeout(Duration),
}

impl Engine {
    /// Whether the data plane is held: no virtual cluster serves, the proxy
    /// is not ready (`/admin/ready` answers 503), status says `held`.
    pub fn is_held(&self) -> bool {
        self.hold.is_held()
    }

    /// Whether clients should be sent here: started, not stopping, not held
    /// (`GET /admin/ready`).
    pub fn serves(&self) -> bool {
        self.is_ready() && !self.is_held()
    }

    /// Serves from now on, with the version in force; logs what released
    /// it. Returns whether the data plane was held (a second release is a
    /// no-op).
    pub fn release(&self, by: Release) -> bool {
        if !self.hold.release() {
            return false;
        }
        let version = self.lock().config.version.clone();
        match by {
            Release::Endpoint => {
                tracing::info!(%version, "data plane released by POST /admin/config/release: serving the version held");
            }
            Release::Reload => {
                tracing::info!(%version, "data plane released by a reload: serving the version it applied");
            }
            Release::Timeout(after) => {
                tracing::warn!(%version, hold = ?after, "no watcher released the data plane within the --hold timeout: serving the configuration file's version");
            }
        }
        true
    }

    /// Releases the data plane when `outcome` applied a version: a reload
    /// that commits says which version to serve. Any other outcome leaves a
    /// hold as it is: the version held, sent again, is unchanged and commits
    /// nothing (`POST /admin/config/release` serves it).
    pub fn release_after(&self, outcome: &ReloadOutcome) {
        if matches!(outcome, ReloadOutcome::Applied { .. }) {
            self.release(Release::Reload);
        }
    }
}
