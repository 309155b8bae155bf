//! The `sha256:<hex>` versions: the configuration version the proxy reports,
//! the digest the watcher compares and the webhook remembers verdicts by, and
//! the effective version over a configuration and the files it references.
//! The types are `sluice-admin-api`'s; this is where they are computed.

use sha2::{Digest, Sha256};
use sluice_admin_api::{ConfigVersion, EffectiveVersion};

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
/// order read), the path as written and the version of its content (`None`:
/// it could not be read). The proxy publishes it for what it validated or
/// runs; the watcher computes it over what it sees, by the same function, to
/// notice a changed file when the configuration's bytes did not change. No
/// single file's digest is ever published on its own.
pub fn effective_version<'a>(
    config_version: &ConfigVersion,
    files: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> EffectiveVersion {
    let mut text = format!("sluice-effective-v1\n{config_version}\n");
    for (path, version) in files {
        text.push_str(path);
        text.push('\0');
        text.push_str(version.unwrap_or("unreadable"));
        text.push('\n');
    }
    EffectiveVersion::from_sha256(&Sha256::digest(text.as_bytes()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_effective_version_changes_with_any_file_and_only_then() {
        let c = config_version(b"c");
        let d = config_version(b"d");
        let base = effective_version(&c, [("a.pem", Some("sha256:1"))]);
        assert_eq!(base, effective_version(&c, [("a.pem", Some("sha256:1"))]));
        for other in [
            effective_version(&d, [("a.pem", Some("sha256:1"))]),
            effective_version(&c, [("a.pem", Some("sha256:2"))]),
            effective_version(&c, [("a.pem", None)]),
            effective_version(&c, [("b.pem", Some("sha256:1"))]),
            effective_version(&c, []),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn digests_are_prefixed_lowercase_hex() {
        assert_eq!(
            sha256_hex(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
