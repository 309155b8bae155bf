//! `POST /admin/config/validate`: is this configuration valid, and what would
//! a reload of it change? Validating touches nothing, so a caller (the
//! watcher) validates first and reloads only what is valid.

use serde::{Deserialize, Serialize};

use crate::error::{Refused, read};
use crate::version::{ConfigVersion, EffectiveVersion};
use crate::{Changes, ConfigProblem};

/// The answer, by status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ValidateAnswer {
    /// 200.
    Valid(ConfigValid),
    /// 400.
    Invalid(ConfigInvalid),
}

/// 200: the configuration is valid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigValid {
    /// Always `true`: tells the answers apart without the status.
    pub valid: bool,
    /// `sha256:<hex>` of the bytes sent: what a reload of them would put in
    /// force, and what its `If-Match` would name afterwards.
    pub config_version: ConfigVersion,
    /// What a reload would change, compared with the configuration in force.
    pub changes: Changes,
    /// Every file the configuration references, as written in it (relative
    /// paths are taken from the configuration's directory), in 200 and 400
    /// answers alike: what a watcher watches besides the configuration.
    #[serde(default)]
    pub files: Vec<String>,
    /// `sha256:<hex>` of the configuration and the contents of `files` as
    /// the proxy read them; changes when any of them does.
    pub effective_version: EffectiveVersion,
}

/// 400: the configuration is invalid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigInvalid {
    /// Always `false`: tells the answers apart without the status.
    pub valid: bool,
    /// `sha256:<hex>` of the bytes sent, so a caller can remember which
    /// content was rejected and not send it again.
    pub config_version: ConfigVersion,
    /// Every problem found, sorted by position: all at once, so one edit can
    /// fix them all.
    pub errors: Vec<ConfigProblem>,
    /// Every file the configuration references, as written in it (relative
    /// paths are taken from the configuration's directory), in 200 and 400
    /// answers alike: what a watcher watches besides the configuration.
    #[serde(default)]
    pub files: Vec<String>,
    /// `sha256:<hex>` of the configuration and the contents of `files` as
    /// the proxy read them; changes when any of them does.
    pub effective_version: EffectiveVersion,
}

impl ValidateAnswer {
    /// The configuration is valid; it references `files` and, with them as
    /// read, has `effective_version`.
    pub fn valid(
        config_version: ConfigVersion,
        changes: Changes,
        files: Vec<String>,
        effective_version: EffectiveVersion,
    ) -> ValidateAnswer {
        ValidateAnswer::Valid(ConfigValid {
            valid: true,
            config_version,
            changes,
            files,
            effective_version,
        })
    }

    /// The configuration is invalid; it references `files` (as far as it
    /// could be read) and, with them as read, has `effective_version`.
    pub fn invalid(
        config_version: ConfigVersion,
        errors: Vec<ConfigProblem>,
        files: Vec<String>,
        effective_version: EffectiveVersion,
    ) -> ValidateAnswer {
        ValidateAnswer::Invalid(ConfigInvalid {
            valid: false,
            config_version,
            errors,
            files,
            effective_version,
        })
    }

    /// The HTTP status that goes with the answer.
    pub fn status(&self) -> u16 {
        match self {
            ValidateAnswer::Valid(_) => 200,
            ValidateAnswer::Invalid(_) => 400,
        }
    }

    /// Reads an HTTP answer: its status picks the shape; any other status
    /// (the caller, the body's size) is a [`Refused`].
    pub fn from_http(status: u16, body: &[u8]) -> Result<ValidateAnswer, Refused> {
        match status {
            200 => read(status, body).map(ValidateAnswer::Valid),
            400 => read(status, body).map(ValidateAnswer::Invalid),
            _ => Err(Refused::new(status, body)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roundtrip::roundtrip;

    #[test]
    fn valid_roundtrips() {
        let json = r#"{"valid": true, "configVersion": "sha256:ab00000000000000000000000000000000000000000000000000000000000000",
            "changes": {"added": [], "removed": [], "unchanged": ["b"], "global": [],
                        "modified": [{"name": "a", "reasons": ["upstream.bootstrapServers changed"]}],
                        "rotated": []},
            "files": ["certs/ca.crt"], "effectiveVersion": "sha256:ef00000000000000000000000000000000000000000000000000000000000000"}"#;
        let v: ConfigValid = roundtrip(json);
        let answer = ValidateAnswer::valid(
            v.config_version.clone(),
            v.changes.clone(),
            v.files.clone(),
            v.effective_version.clone(),
        );
        assert_eq!(answer, ValidateAnswer::Valid(v));
        assert_eq!(answer.status(), 200);
        assert_eq!(
            ValidateAnswer::from_http(200, json.as_bytes()),
            Ok(answer.clone())
        );
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            serde_json::from_str::<serde_json::Value>(json).unwrap()
        );
    }

    #[test]
    fn invalid_roundtrips() {
        let json = r#"{"valid": false, "configVersion": "sha256:cd00000000000000000000000000000000000000000000000000000000000000",
            "errors": [{"line": 1, "column": 19, "path": "", "message": "invalid YAML: did not find expected node content"}],
            "files": [], "effectiveVersion": "sha256:ef00000000000000000000000000000000000000000000000000000000000000"}"#;
        let v: ConfigInvalid = roundtrip(json);
        assert_eq!(
            ValidateAnswer::from_http(400, json.as_bytes()),
            Ok(ValidateAnswer::invalid(
                v.config_version,
                v.errors,
                v.files,
                v.effective_version
            ))
        );
    }

    #[test]
    fn other_statuses_are_refusals() {
        let r = ValidateAnswer::from_http(401, br#"{"error": "a bearer token is required"}"#);
        assert_eq!(r.unwrap_err().message, "a bearer token is required");
        assert_eq!(
            ValidateAnswer::from_http(200, b"{}").unwrap_err().status,
            200
        );
    }
}
