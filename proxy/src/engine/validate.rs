//! Validate: what a reload of some bytes would do, without doing it. The
//! same validation and diff as a reload's first steps; the attempt is
//! recorded for `/admin/config/status`.

use super::Engine;
use crate::config::{
    AttemptedVersion, Changes, ConfigProblem, ConfigVersion, Referenced, diff, validate_referenced,
};

/// How validating a configuration ended.
#[derive(Debug, Clone)]
pub enum ValidateOutcome {
    /// Valid; a reload would make these changes.
    Valid {
        /// Its version.
        version: ConfigVersion,
        /// What a reload would change, compared with the configuration in force.
        changes: Changes,
        /// The files it references, and its effective version.
        referenced: Referenced,
    },
    /// Invalid.
    Invalid {
        /// Version of the bytes sent.
        version: ConfigVersion,
        /// Every error, sorted by position.
        errors: Vec<ConfigProblem>,
        /// The files it references (those it could not read included).
        referenced: Referenced,
    },
}

impl Engine {
    /// Validates `bytes` (reading the files they name from this engine's
    /// file source) and compares them with the configuration in force.
    /// Changes nothing but the record of the last validation attempt.
    pub fn validate(&self, bytes: &[u8]) -> ValidateOutcome {
        let attempt = self.next_attempt();
        let current = self.config();
        let version = crate::config::config_version(bytes);
        let requested = AttemptedVersion::from(version.clone());
        let (checked, referenced) = validate_referenced(bytes, &*self.files);
        let outcome = match checked {
            Ok(new) => ValidateOutcome::Valid {
                changes: diff(&current.config, &new.config),
                version: new.version,
                referenced,
            },
            Err(errors) => ValidateOutcome::Invalid {
                version,
                errors,
                referenced,
            },
        };
        let (errors, requested) = match &outcome {
            ValidateOutcome::Valid { .. } => (0, requested),
            ValidateOutcome::Invalid {
                errors, referenced, ..
            } => {
                // The bytes in force with other files: recorded under the
                // effective version, never as a failure of the version in
                // force.
                let requested = if requested == current.version {
                    referenced.effective_version.clone().into()
                } else {
                    requested
                };
                (errors.len(), requested)
            }
        };
        self.record_validation(attempt, requested, errors);
        outcome
    }
}
