//! The quota metrics' label sets.

use prometheus_client::encoding::EncodeLabelSet;

/// `cluster` and `kind` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct KindLabels {
    /// Virtual cluster name.
    pub(crate) cluster: String,
    /// `produce` or `fetch`.
    pub(crate) kind: &'static str,
}

/// `cluster`, `principal` and `kind` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct PrincipalBytesLabels {
    /// Virtual cluster name.
    pub(crate) cluster: String,
    /// The principal ("" for connections without one), or `other` past
    /// `maxPrincipals`.
    pub(crate) principal: String,
    /// `produce` or `fetch`.
    pub(crate) kind: &'static str,
}

/// `cluster`, `client_id` and `kind` labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ClientLabels {
    /// Virtual cluster name.
    pub(crate) cluster: String,
    /// The client id, or `other` past `maxClientIds`.
    pub(crate) client_id: String,
    /// `produce` or `fetch`.
    pub(crate) kind: &'static str,
}
