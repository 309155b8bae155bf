//! `POST /admin/config/release`: a proxy started held (`run --hold`) serves
//! the version it holds from now on. A watcher calls it once it has found
//! that a healthy peer vouches for that version, or that no peer vouches for
//! any (the whole fleet restarted at once). Token-guarded like reload;
//! no body; always 200.

use serde::{Deserialize, Serialize};

use crate::version::ConfigVersion;

/// The answer of `POST /admin/config/release`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Released {
    /// Whether this call released the data plane (`false`: it was not held,
    /// or no longer: released before, or a reload applied).
    pub released: bool,
    /// The version it serves.
    pub current_config_version: ConfigVersion,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roundtrip::roundtrip;

    #[test]
    fn released_roundtrips() {
        let v = format!("sha256:{}", "ab".repeat(32));
        let json = format!(r#"{{"released": true, "currentConfigVersion": "{v}"}}"#);
        let answer = roundtrip::<Released>(&json);
        assert!(answer.released);
        assert_eq!(answer.current_config_version.as_str(), v);
    }
}
