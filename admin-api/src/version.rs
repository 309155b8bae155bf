//! Versions, parsed once where they enter and compared as types.
//!
//! Each is a `sha256:<64 lowercase hex>` digest on the wire; the types say
//! what was digested, so a configuration's version is never compared with
//! an effective version by mistake:
//!
//! - [`ConfigVersion`]: the configuration's exact bytes;
//! - [`EffectiveVersion`]: the configuration and the content of every file
//!   it references (`sluice-volume` computes both);
//! - [`AttemptedVersion`]: what an attempt or a failure is recorded under:
//!   the configuration's version, or its effective version when the very
//!   bytes in force were sent again and only referenced files differ.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

const PREFIX: &str = "sha256:";
const HEX_DIGITS: usize = 64;

/// Why a text is not a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionError {
    /// The text, cut to a length fit for a message.
    pub found: String,
}

impl fmt::Display for VersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not a version (sha256: and 64 lowercase hex digits): {:?}",
            self.found
        )
    }
}

impl std::error::Error for VersionError {}

fn check(text: &str) -> Result<(), VersionError> {
    let ok = text.strip_prefix(PREFIX).is_some_and(|hex| {
        hex.len() == HEX_DIGITS && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    });
    if ok {
        Ok(())
    } else {
        Err(VersionError {
            found: text.chars().take(80).collect(),
        })
    }
}

fn format_digest(digest: &[u8; 32]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(PREFIX.len() + HEX_DIGITS);
    out.push_str(PREFIX);
    for b in digest {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// One digest type: its constructors, text form and serde, all checked.
macro_rules! digest_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// The version whose SHA-256 digest is `digest`.
            pub fn from_sha256(digest: &[u8; 32]) -> Self {
                $name(format_digest(digest))
            }

            /// `sha256:<hex>`.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The first 12 hex digits, for people and logs.
            pub fn short(&self) -> &str {
                &self.0[PREFIX.len()..PREFIX.len() + 12]
            }
        }

        impl FromStr for $name {
            type Err = VersionError;
            fn from_str(text: &str) -> Result<Self, VersionError> {
                check(text)?;
                Ok($name(text.to_owned()))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                check(&text).map_err(serde::de::Error::custom)?;
                Ok($name(text))
            }
        }
    };
}

digest_type!(
    /// `sha256:<hex>` of a configuration's exact bytes.
    ConfigVersion
);

digest_type!(
    /// `sha256:<hex>` over a configuration's version and, for each file it
    /// references, the path and the digest of its content: changes when a
    /// certificate does and the configuration's bytes do not.
    EffectiveVersion
);

digest_type!(
    /// What an attempt (a reload, a validation) or a failure is recorded
    /// under: the version of the configuration it carried, or, when it
    /// carried the very bytes in force, its effective version, so that a
    /// failure of renewed files is never pinned on the version in force.
    AttemptedVersion
);

impl From<ConfigVersion> for AttemptedVersion {
    fn from(v: ConfigVersion) -> Self {
        AttemptedVersion(v.0)
    }
}

impl From<EffectiveVersion> for AttemptedVersion {
    fn from(v: EffectiveVersion) -> Self {
        AttemptedVersion(v.0)
    }
}

impl PartialEq<ConfigVersion> for AttemptedVersion {
    fn eq(&self, other: &ConfigVersion) -> bool {
        self.0 == other.0
    }
}

impl PartialEq<EffectiveVersion> for AttemptedVersion {
    fn eq(&self, other: &EffectiveVersion) -> bool {
        self.0 == other.0
    }
}

/// Serde for an optional version written as `""` when absent (an attempt
/// refused before its bytes were read has none): the wire keeps its shape.
pub mod empty_as_none {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes `None` as `""`.
    pub fn serialize<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => v.serialize(s),
            None => s.serialize_str(""),
        }
    }

    /// Reads `""` (or `null`) as `None`.
    pub fn deserialize<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
        D: Deserializer<'de>,
    {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) if text.is_empty() => Ok(None),
            Some(text) => text.parse().map(Some).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn parsed_once_and_written_back_unchanged() {
        let v: ConfigVersion = V.parse().unwrap();
        assert_eq!(v.as_str(), V);
        assert_eq!(v.short(), "e3b0c44298fc");
        assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{V}\""));
        let back: ConfigVersion = serde_json::from_str(&format!("\"{V}\"")).unwrap();
        assert_eq!(back, v);
        let mut digest = [0u8; 32];
        digest[0] = 0xe3;
        assert!(
            ConfigVersion::from_sha256(&digest)
                .as_str()
                .starts_with("sha256:e300")
        );
    }

    #[test]
    fn anything_else_is_refused_with_what_was_found() {
        for bad in [
            "",
            "sha256:",
            "sha256:ab",
            "md5:e3b0c44298fc1c149afbf4c8996fb924",
            &V.to_uppercase(),
            &format!("{V}0"),
        ] {
            let e = bad.parse::<EffectiveVersion>().unwrap_err();
            assert!(e.to_string().contains("not a version"), "{bad}");
            assert!(serde_json::from_str::<EffectiveVersion>(&format!("{bad:?}")).is_err());
        }
    }

    #[test]
    fn an_attempt_compares_with_what_it_was_made_from() {
        let config: ConfigVersion = V.parse().unwrap();
        let attempted = AttemptedVersion::from(config.clone());
        assert_eq!(attempted, config);
        let effective: EffectiveVersion = V.parse().unwrap();
        assert_eq!(AttemptedVersion::from(effective.clone()), effective);
    }

    #[test]
    fn an_absent_version_is_an_empty_string_on_the_wire() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Attempt {
            #[serde(with = "empty_as_none")]
            v: Option<AttemptedVersion>,
        }
        let none = Attempt { v: None };
        assert_eq!(serde_json::to_string(&none).unwrap(), r#"{"v":""}"#);
        assert_eq!(
            serde_json::from_str::<Attempt>(r#"{"v":""}"#).unwrap(),
            none
        );
        let some: Attempt = serde_json::from_str(&format!(r#"{{"v":"{V}"}}"#)).unwrap();
        assert_eq!(some.v.unwrap().as_str(), V);
    }
}
