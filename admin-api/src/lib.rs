//! `sluice-admin-api`: the shapes of the proxy's admin API, written once and
//! used by the proxy (which serves them), the watcher (which calls them) and
//! the tests (which assert them). Nobody builds or reads this JSON by hand.
//!
//! Every answer derives `Serialize` and `Deserialize` with the wire names in
//! camelCase. Answers never deny unknown fields, so an older client reads a
//! newer proxy's answers. The endpoints whose status code picks the shape
//! ([`ValidateAnswer`], [`ReloadAnswer`]) say which status goes with which
//! shape, and read an HTTP answer back with `from_http`.
//!
//! - [`endpoints`]: paths, methods, request bodies and headers
//! - [`problem`]: one configuration error and its `line:column: path: message` line
//! - [`analysis`]: the client-side analysis of a version, and its findings
//! - [`changes`]: what a reload changes, per virtual cluster
//! - [`validate`]: `POST /admin/config/validate`
//! - [`reload`]: `POST /admin/config/reload`
//! - [`release`]: `POST /admin/config/release`, for a proxy started held
//! - [`status`]: `GET /admin/config/status`
//! - [`clusters`]: `GET /admin/clusters`
//! - [`probes`]: `GET /admin/health` and `GET /admin/ready`
//! - [`version`]: configuration, effective and attempted versions, parsed once
//! - [`error`]: the error body of every other failure, and reading answers back
//! - [`echo`]: text from the network or a file, escaped and cut before it is echoed

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod analysis;
pub mod changes;
pub mod clusters;
pub mod echo;
pub mod endpoints;
pub mod error;
pub mod probes;
pub mod problem;
pub mod release;
pub mod reload;
pub mod status;
pub mod validate;
pub mod version;

pub use analysis::{
    Analysis, ClientSignals, ClusterAnalysis, DoorStep, Finding, FrontDoor, Verdict,
};
pub use changes::{Changes, ModifiedCluster};
pub use clusters::{ClusterState, ClusterStatus, Clusters, DrainingStatus, SniNames};
pub use echo::{MAX_ECHO_CHARS, echoed, echoed_within};
pub use error::{ErrorBody, Refused};
pub use probes::{Health, HealthStatus, Readiness};
pub use problem::ConfigProblem;
pub use release::Released;
pub use reload::{
    ReloadAnswer, ReloadApplied, ReloadBusy, ReloadNotApplied, ReloadRejected, UpstreamCheckFailure,
};
pub use status::{
    ConfigStatus, FailedCluster, FailedVersion, FailureStage, ReloadAttempt, ReloadStage,
    ReloadStatus, ValidationAttempt, ValidationStatus,
};
pub use validate::{ConfigInvalid, ConfigValid, ValidateAnswer};
pub use version::{AttemptedVersion, ConfigVersion, EffectiveVersion, VersionError};

#[cfg(test)]
mod roundtrip {
    //! The check every answer type's test uses.

    use serde::Serialize;
    use serde::de::DeserializeOwned;

    /// `json` is read into `T` and written back unchanged (same fields, same
    /// values); returns what was read.
    pub(crate) fn roundtrip<T: Serialize + DeserializeOwned>(json: &str) -> T {
        let value: serde_json::Value = serde_json::from_str(json).expect("example is JSON");
        let typed: T = serde_json::from_str(json).expect("example reads as the type");
        let back = serde_json::to_value(&typed).expect("type writes as JSON");
        assert_eq!(back, value, "written back differently");
        typed
    }
}
