//! The last few valid configurations this replica admitted, by version. An
//! UPDATE's old object is almost always one of them (the configuration the
//! same webhook allowed last time), so the warnings it needs cost a hash,
//! not a second validation. Only used when validation reads no files: then
//! the verdict is a function of the bytes alone.

use std::collections::VecDeque;
use std::sync::Mutex;

use sluice_config::{ConfigVersion, ValidConfig};

/// How many configurations are kept. Each is shared with nothing else once
/// evicted; a 1,000-cluster configuration takes a few megabytes.
const KEEP: usize = 4;

/// Recently admitted valid configurations, newest first.
#[derive(Debug, Default)]
pub struct Recent {
    entries: Mutex<VecDeque<ValidConfig>>,
}

impl Recent {
    /// The valid configuration of this version, if admitted lately.
    pub fn get(&self, version: &ConfigVersion) -> Option<ValidConfig> {
        self.lock().iter().find(|c| &c.version == version).cloned()
    }

    /// Remembers a valid configuration (the oldest one goes past [`KEEP`]).
    pub fn put(&self, valid: &ValidConfig) {
        let mut entries = self.lock();
        entries.retain(|c| c.version != valid.version);
        entries.push_front(valid.clone());
        entries.truncate(KEEP);
    }

    /// How many configurations are kept now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<ValidConfig>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
