//! What a rollout is of: the one type the watcher's decider and its fleet
//! gate share (below both, so neither reaches up into the other).

use sluice_admin_api::{AttemptedVersion, ConfigVersion, EffectiveVersion};

/// What a rollout is of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The configuration's version (`sha256:` of its bytes).
    pub config: ConfigVersion,
    /// The effective version (the configuration and the contents of every
    /// file it references), when the rollout is of referenced files that
    /// changed under the configuration in force; `None` for a new
    /// configuration, whose referenced files are known only once validated.
    pub effective: Option<EffectiveVersion>,
}

impl Target {
    /// A new configuration.
    pub fn config(version: &ConfigVersion) -> Target {
        Target {
            config: version.clone(),
            effective: None,
        }
    }

    /// The version a failure of it is recorded under, by the proxy that
    /// failed it and by this watcher: the effective version for a change of
    /// referenced files only (the proxy never pins that on the
    /// configuration in force), else the configuration's.
    pub fn id(&self) -> AttemptedVersion {
        match &self.effective {
            Some(e) => e.clone().into(),
            None => self.config.clone().into(),
        }
    }
}
