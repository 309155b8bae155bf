//! The `sha256:<hex>` versions: the configuration version the proxy reports,
//! the digest the watcher compares and the webhook remembers verdicts by, and
//! the effective version over a configuration and the files it references.
//! The types are `sluice-admin-api`'s; this is where they are computed.
//!
//! The effective version is published without a token (status, validate
//! answers), and a referenced file may hold a secret (a SASL password, the
//! admin token). It must not let a reader of status test guesses of a
//! secret offline; see `docs/security.md`, `## Versions`:
//!
//! - the admin token file, when set, is itself a referenced file: its
//!   content (a strong token, enforced) enters every effective version, so
//!   without the token no guess can be checked at all;
//! - each file's digest is also stretched ([`stretch`]: PBKDF2-HMAC-SHA256,
//!   [`STRETCH_ITERATIONS`] rounds, salted with the configuration's version
//!   and the path), so that without a token every guess costs a PBKDF2 run
//!   and no table can be computed ahead. Stretches are cached per (salt,
//!   digest), so the watcher's pass and the proxy's validation pay once per
//!   new file content, not per comparison.

mod stretch;

use sha2::{Digest, Sha256};
use sluice_admin_api::{ConfigVersion, EffectiveVersion};

pub use stretch::{STRETCH_ITERATIONS, stretch};

/// `sha256:<hex>` of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    config_version(bytes).to_string()
}

/// The version of a configuration's exact `bytes`.
pub fn config_version(bytes: &[u8]) -> ConfigVersion {
    ConfigVersion::from_sha256(&Sha256::digest(bytes).into())
}

/// The effective version of a configuration: `sha256:<hex>` over the
/// configuration's own version and, for each file it references (in the
/// order read), the path as written and the [`stretch`] of the version of
/// its content (`None`: it could not be read). The proxy publishes it for
/// what it validated or runs; the watcher computes it over what it sees, by
/// the same function, to notice a changed file when the configuration's
/// bytes did not change. No single file's digest is ever published.
pub fn effective_version<'a>(
    config_version: &ConfigVersion,
    files: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> EffectiveVersion {
    let mut hash = Sha256::new();
    hash.update(format!("sluice-effective-v2\n{config_version}\n"));
    for (path, version) in files {
        hash.update(path);
        hash.update(b"\0");
        match version {
            Some(version) => hash.update(stretch::cached(config_version, path, version)),
            None => hash.update(b"unreadable"),
        }
        hash.update(b"\n");
    }
    EffectiveVersion::from_sha256(&hash.finalize().into())
}

#[cfg(test)]
mod tests;
