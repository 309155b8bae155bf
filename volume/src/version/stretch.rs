//! One referenced file's digest, stretched: PBKDF2-HMAC-SHA256 over the
//! version of its content, salted with the configuration's version and the
//! path, so that checking a guess of a file's content against a published
//! effective version costs a PBKDF2 run per guess and configuration.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Mutex, OnceLock, PoisonError};

use ring::pbkdf2;
use sluice_admin_api::ConfigVersion;

/// PBKDF2 rounds per file digest. Measured in `docs/security.md` (`##
/// Versions`): about 35 ms per guess on one core of the test machine
/// (release build); the fleet pays it once per new file content and
/// configuration, each process caching what it computed.
pub const STRETCH_ITERATIONS: u32 = 100_000;

/// Cached stretches before the cache is emptied: far more than the files
/// of the configurations one process sees between two changes.
const CACHE_ENTRIES: usize = 1024;

type Cache = Mutex<HashMap<(String, String), [u8; 32]>>;

/// The stretch of `version` (a file content's `sha256:<hex>`) for the file
/// at `path` of a configuration of version `config`, computed anew.
pub fn stretch(config: &ConfigVersion, path: &str, version: &str) -> [u8; 32] {
    let iterations = NonZeroU32::new(STRETCH_ITERATIONS).unwrap_or(NonZeroU32::MIN);
    let mut out = [0u8; 32];
    pbkdf2::derive(
        pbkdf2::PBKDF2_HMAC_SHA256,
        iterations,
        salt(config, path).as_bytes(),
        version.as_bytes(),
        &mut out,
    );
    out
}

fn salt(config: &ConfigVersion, path: &str) -> String {
    format!("sluice-file-v2\0{config}\0{path}")
}

/// [`stretch`], remembered per (salt, version) for this process.
pub(super) fn cached(config: &ConfigVersion, path: &str, version: &str) -> [u8; 32] {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Cache::default);
    let key = (salt(config, path), version.to_owned());
    if let Some(hit) = cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return *hit;
    }
    // Computed outside the lock: two threads may both compute it once.
    let value = stretch(config, path, version);
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= CACHE_ENTRIES {
        cache.clear();
    }
    cache.insert(key, value);
    value
}
