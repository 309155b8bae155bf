//! What a configuration asks of the machine, collected in the [`Cx`]
//! while it is read and checked once all of it is read: the ports each
//! listener claims (checked in `listeners`) and the server names each SNI
//! cluster claims on its port (checked in `sni`). Below the reader and
//! the rules, which both hold them.
//!
//! [`Cx`]: crate::read::Cx

use std::net::IpAddr;

use super::types::{HostPattern, SniHost};
use super::yaml::Mark;

/// Who asked for a port, so the message can name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    /// `admin.listen`.
    Admin,
    /// A virtual cluster's `bootstrapPort`, `brokerPorts` or `sni.port`.
    Cluster {
        /// Position in `virtualClusters`.
        index: usize,
        /// Its name as written, when it is a string.
        name: Option<String>,
        /// `bootstrapPort`, `brokerPorts` or `sni.port`.
        field: &'static str,
    },
}

/// Ports `first..=last` on `host`, asked for at `path`.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    pub(crate) host: IpAddr,
    pub(crate) first: u16,
    pub(crate) last: u16,
    pub(crate) owner: Owner,
    pub(crate) path: String,
    pub(crate) mark: Mark,
    /// An SNI port: shared with the other SNI claims on the same host.
    pub(crate) shared: bool,
}

/// The names one SNI cluster asks for on its port, with where each was written.
#[derive(Debug, Clone)]
pub(crate) struct SniClaim {
    pub(crate) host: IpAddr,
    pub(crate) port: u16,
    /// Position in `virtualClusters`.
    pub(crate) index: usize,
    /// Its name as written, when it is a string.
    pub(crate) name: Option<String>,
    pub(crate) bootstrap: Option<(SniHost, String, Mark)>,
    pub(crate) pattern: Option<(HostPattern, String, Mark)>,
}
