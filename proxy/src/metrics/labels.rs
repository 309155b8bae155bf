//! The label sets of the proxy's metric families.

use prometheus_client::encoding::EncodeLabelSet;

/// `cluster` label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClusterLabel {
    /// Virtual cluster name.
    pub cluster: String,
}

/// `cluster` and `api` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ApiLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// Kafka API name, e.g. `Metadata`.
    pub api: String,
}

/// `cluster` and `direction` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct DirectionLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// `to_upstream` or `to_client`.
    pub direction: &'static str,
}

/// `cluster` and `reason` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ReasonLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// Why, e.g. `too_large`.
    pub reason: &'static str,
}

/// `cluster` and `cause` labels (a client's error: a fixed set).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CauseLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// What the client did, e.g. `malformed`.
    pub cause: &'static str,
}

/// `cluster`, `operation` and `rule` labels (a topic policy's operations:
/// a fixed set; its rules: as many as the configuration lists).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct OperationLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// The operation, e.g. `produce`.
    pub operation: &'static str,
    /// The deciding rule: its position in `rules`, from 1; `default` when
    /// no rule matched; `every-topic` for a request naming every topic,
    /// which no policy allows.
    pub rule: String,
    /// The request's principal: "" without one; `other` past the first
    /// hundred a cluster has seen (`principals`).
    pub principal: String,
}

/// `reason` label of connections the SNI port could not route.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct UnroutedLabel {
    /// `unknown` (a server name no cluster has) or `missing` (none, or no TLS).
    pub reason: &'static str,
}

/// `cluster` and `result` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ResultLabels {
    /// Virtual cluster name.
    pub cluster: String,
    /// The outcome.
    pub result: &'static str,
}
