//! The front-door check of a virtual cluster: the steps a client takes
//! through the addresses the gateway advertises, so that a version that
//! validates, passes the upstream check and still breaks every client (an
//! advertised host where nothing listens, a node id mapped to no port, a
//! certificate without the advertised name) is seen before it spreads.
//!
//! Steps, in order; a step after a failed one does not run, and each is
//! bounded by the door's timeout:
//!
//! 1. `bootstrap`: connect to the advertised bootstrap address
//!    (`advertisedHost:bootstrapPort`, or the SNI bootstrap host on the SNI
//!    port), the name resolved as a client resolves it; TLS when the gateway
//!    has it, verifying the advertised name (also the SNI name) against the
//!    door's trust; ApiVersions;
//! 2. `metadata`: Metadata for no topic on the same connection; it fails
//!    when no broker is advertised;
//! 3. `brokers`: connect, TLS and ApiVersions to every advertised broker.
//!
//! [`compare`] turns a check on the version before and one on the version
//! after into findings (worse now) and notes (never worked). The check uses
//! the proxy's own Kafka client (`dataplane::client`) and its dialer.
//! See `docs/front-door.md`.

use std::fmt;
use std::time::Duration;

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use sluice_admin_api::analysis::FrontDoor;
use sluice_config::model::{Routing, VirtualCluster};
use sluice_config::tls::ClientMaterial;
use tokio_rustls::TlsConnector;

use crate::dataplane::tls;

mod compare;
mod steps;
#[cfg(test)]
mod tests;

pub use compare::compare;

/// Building a [`Door`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DoorError {
    /// The CA file holds no certificate, or PEM that does not parse.
    #[error("virtual cluster {cluster}: front door CA file: {why}")]
    CaFile {
        /// The virtual cluster.
        cluster: String,
        /// Why.
        why: String,
    },
    /// The gateway's certificate chain was not read (the configuration was
    /// validated without its files), and no CA file was given.
    #[error("virtual cluster {0}: the gateway's certificate chain was not loaded")]
    NoChain(String),
    /// rustls refused the trust.
    #[error("virtual cluster {cluster}: front door TLS: {why}")]
    Tls {
        /// The virtual cluster.
        cluster: String,
        /// Why.
        why: String,
    },
}

/// What the front door checks for one virtual cluster: its gateway's
/// routing as configured, how a client trusts its TLS, and how long each
/// step may take.
#[derive(Debug, Clone)]
pub struct Door {
    cluster: String,
    routing: Routing,
    tls: Option<DoorTls>,
    timeout: Duration,
    /// Its clients authenticate before Metadata (`upstream.sasl`: the
    /// broker requires SASL): the check, which has no client credentials,
    /// goes as far as a client goes before SASL.
    authenticated: bool,
}

/// The trust a client uses for the gateway's TLS.
#[derive(Clone)]
pub struct DoorTls {
    connector: TlsConnector,
    /// Where the trust came from, for `Debug`.
    from: Trust,
}

#[derive(Debug, Clone, Copy)]
enum Trust {
    /// `analysis.frontDoor.caFile`.
    CaFile,
    /// The last certificate of the gateway's own chain.
    GatewayChain,
}

impl fmt::Debug for DoorTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DoorTls")
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

impl Door {
    /// The door of `cluster`'s gateway. `ca` is the content of
    /// `analysis.frontDoor.caFile` (PEM); without it, and when the gateway
    /// has TLS, the last certificate of the gateway's own chain is the root
    /// a client trusts. `ca` is ignored when the gateway has no TLS.
    pub fn of(
        cluster: &VirtualCluster,
        ca: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Door, DoorError> {
        let roots = match ca {
            Some(pem) => ca_certificates(&cluster.name.to_string(), pem)?,
            None => Vec::new(),
        };
        Door::with_roots(cluster, &roots, timeout)
    }

    /// [`Door::of`] with the CA file's certificates already read (as the
    /// configuration loads `analysis.frontDoor.caFile`); empty: the last
    /// certificate of the gateway's own chain is the root.
    pub fn with_roots(
        cluster: &VirtualCluster,
        roots: &[CertificateDer<'static>],
        timeout: Duration,
    ) -> Result<Door, DoorError> {
        let name = cluster.name.to_string();
        let tls = match &cluster.gateway.tls {
            Some(gateway) => Some(trust(&name, roots, &gateway.material.0.cert_chain)?),
            None => None,
        };
        Ok(Door {
            cluster: name,
            routing: cluster.gateway.routing.clone(),
            tls,
            timeout,
            authenticated: cluster.upstream.sasl.is_some(),
        })
    }

    /// The virtual cluster.
    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    /// How long each step may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The bootstrap address a client is given: host and port.
    fn bootstrap(&self) -> (String, u16) {
        match &self.routing {
            Routing::Ports(p) => (p.advertised_host.to_string(), p.bootstrap_port.get()),
            Routing::Sni(s) => (s.bootstrap_host.as_str().to_owned(), s.port.get()),
        }
    }
}

/// The connector for a client's trust: the CA file's certificates, else
/// the gateway chain's last one.
fn trust(
    cluster: &str,
    ca: &[CertificateDer<'static>],
    chain: &[CertificateDer<'static>],
) -> Result<DoorTls, DoorError> {
    let (roots, from) = match ca {
        [_, ..] => (ca.to_vec(), Trust::CaFile),
        [] => {
            let last = chain
                .last()
                .ok_or_else(|| DoorError::NoChain(cluster.to_owned()))?;
            (vec![last.clone()], Trust::GatewayChain)
        }
    };
    let material = ClientMaterial {
        roots: Some(roots),
        identity: None,
    };
    let connector = tls::connector(&material).map_err(|e| DoorError::Tls {
        cluster: cluster.to_owned(),
        why: e.to_string(),
    })?;
    Ok(DoorTls { connector, from })
}

fn ca_certificates(cluster: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, DoorError> {
    let fail = |why: String| DoorError::CaFile {
        cluster: cluster.to_owned(),
        why,
    };
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(e.to_string()))?;
    if certs.is_empty() {
        return Err(fail("no certificate in it".to_owned()));
    }
    Ok(certs)
}

/// Runs the front-door check of `door` (see the module documentation).
pub async fn check(door: &Door) -> FrontDoor {
    steps::run(door).await
}
