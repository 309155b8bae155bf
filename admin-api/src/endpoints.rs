//! Where each endpoint is and what a request carries. The configuration
//! endpoints take the YAML itself as the body (what a ConfigMap holds, byte
//! for byte: its `sha256` is the version), so there is no JSON request type.
//!
//! | method, path | request | answer |
//! |---|---|---|
//! | `POST` [`VALIDATE`] | YAML body | [`ValidateAnswer`](crate::ValidateAnswer) |
//! | `POST` [`RELOAD`] | YAML body, optional [`IF_MATCH`] | [`ReloadAnswer`](crate::ReloadAnswer) |
//! | `POST` [`RELEASE`] | — | [`Released`](crate::Released) |
//! | `GET` [`STATUS`] | — | [`ConfigStatus`](crate::ConfigStatus) |
//! | `GET` [`CONFIG`] | — | the YAML in force ([`YAML`]), its version as `ETag` |
//! | `GET` [`CLUSTERS`] | — | [`Clusters`](crate::Clusters) |
//! | `GET` [`HEALTH`] | — | [`Health`](crate::Health) |
//! | `GET` [`READY`] | — | [`Readiness`](crate::Readiness), 200 or 503 |
//! | `GET` [`METRICS`] | — | OpenMetrics text |
//!
//! Any other failure (authorization, body too large or too slow, no such
//! endpoint) answers an [`ErrorBody`](crate::ErrorBody).

/// `POST`: is this configuration valid, and what would a reload change?
pub const VALIDATE: &str = "/admin/config/validate";
/// `POST`: make this configuration the one in force (prepare, then commit).
pub const RELOAD: &str = "/admin/config/reload";
/// `POST`: a proxy started held (`run --hold`) serves the version it holds
/// from now on (a reload that applies releases it too).
pub const RELEASE: &str = "/admin/config/release";
/// `GET`: the version in force and the last reload and validation attempts.
pub const STATUS: &str = "/admin/config/status";
/// `GET`: the exact bytes in force.
pub const CONFIG: &str = "/admin/config";
/// `GET`: every virtual cluster's generation and state.
pub const CLUSTERS: &str = "/admin/clusters";
/// `GET`: liveness.
pub const HEALTH: &str = "/admin/health";
/// `GET`: readiness.
pub const READY: &str = "/admin/ready";
/// `GET`: Prometheus metrics.
pub const METRICS: &str = "/metrics";

/// Request header of [`RELOAD`]: apply only on top of this configuration
/// version (412 otherwise), so that two callers never overwrite each other's
/// reload unknowingly. The version may be quoted, as an ETag is.
pub const IF_MATCH: &str = "If-Match";

/// Request header of [`RELOAD`]: apply only when the configuration with its
/// referenced files, as the proxy reads them for this reload, has this
/// effective version (412 otherwise). The watcher sends it for a rollout of
/// renewed files, so that a file that changed again after the rollout gate
/// opened is never applied ahead of the canary.
pub const IF_EFFECTIVE_MATCH: &str = "If-Effective-Match";

/// Content type of [`CONFIG`]'s answer.
pub const YAML: &str = "application/yaml";
