//! State a virtual cluster keeps across its generations, by cluster name.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One `T` per cluster name, made at the cluster's first generation and
/// shared by every later one.
#[derive(Debug)]
pub(super) struct PerCluster<T>(Mutex<HashMap<String, Arc<T>>>);

impl<T> Default for PerCluster<T> {
    fn default() -> Self {
        PerCluster(Mutex::default())
    }
}

impl<T: Default> PerCluster<T> {
    /// Cluster `name`'s.
    pub(super) fn cluster(&self, name: &str) -> Arc<T> {
        let mut all = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(all.entry(name.to_owned()).or_default())
    }
}
