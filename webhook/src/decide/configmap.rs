//! The configuration's bytes from a ConfigMap object: `data` holds UTF-8
//! text, `binaryData` base64 (the API server's JSON form of bytes).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kube::core::DynamicObject;

/// The ConfigMap does not hold a usable configuration under the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigMapError {
    /// Neither `data` nor `binaryData` has the key.
    #[error(
        "{what} has no key {key:?} in data or binaryData: a ConfigMap selected by the \
         sluice webhook (label sluice.dev/proxy-config=true) must hold the proxy \
         configuration under that key"
    )]
    MissingKey {
        /// `ConfigMap namespace/name`.
        what: String,
        /// The configured key.
        key: String,
    },
    /// `data.<key>` is there but is not a string.
    #[error("{what}: data.{key} is not a string")]
    NotText {
        /// `ConfigMap namespace/name`.
        what: String,
        /// The configured key.
        key: String,
    },
    /// `binaryData.<key>` is not a base64 string.
    #[error("{what}: binaryData.{key} is not valid base64: {reason}")]
    NotBase64 {
        /// `ConfigMap namespace/name`.
        what: String,
        /// The configured key.
        key: String,
        /// The decoder's complaint.
        reason: String,
    },
}

/// The value under `key`, from `data` or else `binaryData`.
pub(super) fn config_bytes(
    object: &DynamicObject,
    key: &str,
    what: &str,
) -> Result<Vec<u8>, ConfigMapError> {
    let field = |section: &str| object.data.get(section).and_then(|d| d.get(key));
    if let Some(value) = field("data") {
        return value
            .as_str()
            .map(|s| s.as_bytes().to_vec())
            .ok_or_else(|| ConfigMapError::NotText {
                what: what.to_owned(),
                key: key.to_owned(),
            });
    }
    if let Some(value) = field("binaryData") {
        let not_base64 = |reason: String| ConfigMapError::NotBase64 {
            what: what.to_owned(),
            key: key.to_owned(),
            reason,
        };
        let text = value
            .as_str()
            .ok_or_else(|| not_base64("not a string".to_owned()))?;
        return STANDARD.decode(text).map_err(|e| not_base64(e.to_string()));
    }
    Err(ConfigMapError::MissingKey {
        what: what.to_owned(),
        key: key.to_owned(),
    })
}
