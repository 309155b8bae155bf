//! `sluice-config`: the one definition of a valid proxy configuration,
//! shared by the proxy, the webhook and the CLI.
//!
//! Layering: this crate is pure. It opens no socket and knows nothing of the
//! Kafka wire format (what validation needs of Kafka's APIs is the plain
//! table in [`apis`]); files are read only through a [`FileSource`].
//!
//! [`validate`] is pure and deterministic: the same bytes (and referenced
//! files) give the same result in every pod, in the webhook and in the CLI. It
//! parses, checks every rule, builds filters and loads TLS material, but binds
//! no port and opens no connection, and it returns every error it finds.
//!
//! - [`yaml`]: bytes to a tree of positioned nodes (the only YAML parser use)
//! - `read`: typed readers over that tree that collect errors
//! - [`types`]: names, ports, hosts, durations
//! - [`model`]: the typed configuration
//! - `build`: tree to model, section by section
//! - `claims`: the ports and SNI names a configuration asks for, as read
//! - `listeners`: port conflicts across the whole configuration
//! - [`sasl`]: the proxy's own SASL credentials and static broker list upstream
//! - [`sni`]: server names unique on each SNI port; certificates that cover them
//! - [`warnings`]: what a valid configuration may still get wrong
//! - [`tls`]: TLS settings and their loaded material
//! - [`files`]: where referenced files are read from
//! - [`diff`]: what changes between two configurations
//! - [`filter`]: filter specifications and their validation
//! - [`policy`]: the topic policy's rules and its per-topic decision
//! - [`apis`]: every Kafka API by key and name, and what the proxy does with it

#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;

pub mod apis;
mod build;
mod claims;
pub mod diff;
pub mod files;
pub mod filter;
pub mod identity;
mod listeners;
pub mod model;
pub mod policy;
mod read;
pub mod referenced;
pub mod sasl;
pub mod sni;
pub mod tls;
pub mod types;
pub mod warnings;
pub mod yaml;

pub use build::{MIN_TOKEN_DISTINCT, MIN_TOKEN_LEN, PLACEHOLDER_TOKEN};
pub use diff::diff;
pub use files::{FileRoots, FileSource, LocalFiles, MemoryFiles, PathsOnly, read_config};
pub use model::ProxyConfig;
pub use referenced::{FileSnapshot, Referenced};
pub use sluice_admin_api::{
    AttemptedVersion, Changes, ConfigProblem, ConfigVersion, EffectiveVersion, ModifiedCluster,
};
pub use sluice_volume::config_version;

/// Largest configuration accepted: a Kubernetes ConfigMap holds at most 1 MiB.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024;

/// A configuration that passed validation, with the bytes it came from.
#[derive(Debug, Clone)]
pub struct ValidConfig {
    /// The typed configuration.
    pub config: Arc<ProxyConfig>,
    /// `sha256` of `bytes`.
    pub version: ConfigVersion,
    /// The exact bytes validated, served back by `GET /admin/config`.
    pub bytes: Arc<[u8]>,
    /// The files it references and its effective version.
    pub referenced: Referenced,
    /// The files exactly as this validation read them: validating `bytes`
    /// again through it gives the same configuration, whatever the disk
    /// holds by then (the proxy returns to its last good version so).
    pub files: Arc<FileSnapshot>,
}

/// Validates a configuration, returning every error found, sorted by position.
pub fn validate(bytes: &[u8], files: &dyn FileSource) -> Result<ValidConfig, Vec<ConfigProblem>> {
    validate_referenced(bytes, files).0
}

/// Like [`validate`], and also what the configuration references, valid or
/// not (a configuration rejected because a file was missing names it).
pub fn validate_referenced(
    bytes: &[u8],
    files: &dyn FileSource,
) -> (Result<ValidConfig, Vec<ConfigProblem>>, Referenced) {
    let recording = referenced::Recording::new(files);
    let checked = check(bytes, &recording);
    let version = sluice_volume::config_version(bytes);
    let (referenced, snapshot) = recording.finish(&version);
    let valid = checked.map(|config| ValidConfig {
        config: Arc::new(config),
        version,
        bytes: bytes.into(),
        referenced: referenced.clone(),
        files: Arc::new(snapshot),
    });
    (valid, referenced)
}

fn check(bytes: &[u8], files: &dyn FileSource) -> Result<ProxyConfig, Vec<ConfigProblem>> {
    if bytes.len() > MAX_CONFIG_BYTES {
        return Err(vec![ConfigProblem::whole(format!(
            "file is larger than {MAX_CONFIG_BYTES} bytes (1 MiB, the size limit of a ConfigMap)"
        ))]);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| vec![utf8_error(bytes, &e)])?;
    let root = match yaml::parse(text) {
        Ok(Some(root)) => root,
        Ok(None) => return Err(vec![ConfigProblem::whole("file is empty")]),
        Err(e) => {
            return Err(vec![ConfigProblem {
                line: Some(e.mark.line),
                column: Some(e.mark.column),
                path: String::new(),
                message: format!("invalid YAML: {}", e.message),
            }]);
        }
    };
    let mut cx = read::Cx::new(files);
    let config = build::proxy_config(&mut cx, &root);
    listeners::check(&mut cx);
    sni::check(&mut cx);
    let mut errors = cx.errors;
    if errors.is_empty() {
        if let Some(config) = config {
            return Ok(config);
        }
        // A reader returned None without recording why: a bug, but never a panic.
        errors.push(ConfigProblem::whole("configuration is invalid"));
    }
    errors.sort_by_key(|e| (e.line, e.column));
    errors.dedup();
    Err(errors)
}

fn utf8_error(bytes: &[u8], e: &std::str::Utf8Error) -> ConfigProblem {
    let good = &bytes[..e.valid_up_to()];
    let line = good.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = good.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    // Valid up to here, so this is a whole number of characters.
    let column = std::str::from_utf8(&good[line_start..]).map_or(0, |s| s.chars().count()) + 1;
    ConfigProblem {
        line: Some(u32::try_from(line).unwrap_or(u32::MAX)),
        column: Some(u32::try_from(column).unwrap_or(u32::MAX)),
        path: String::new(),
        message: format!(
            "file is not valid UTF-8 (byte 0x{:02x} at offset {})",
            bytes[e.valid_up_to()],
            e.valid_up_to()
        ),
    }
}
