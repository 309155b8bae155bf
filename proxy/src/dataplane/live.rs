//! What a reload changes in a running generation, in place: TLS material,
//! the proxy's own SASL credentials, the cluster's `limits` and its filter
//! chain. Open connections keep their TLS sessions, read the limits again
//! at their next frame and take the filter chain at their next request;
//! new connections and handshakes use everything new. Nothing here needs a
//! new generation or a drain.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::server::danger::ClientCertVerifier;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::tls::{self, TlsError};
use crate::config::filter::{FilterSpec, QuotaSpec};
use crate::config::identity::Authentication;
use crate::config::model::{Limits, VirtualCluster};
use crate::config::sasl::UpstreamSasl;
use crate::filter::topic_policy::TopicPolicy;
use crate::filter::{self, Filter};

/// A generation's TLS (what it accepts clients with, and connects to the
/// brokers with) and the proxy's own SASL credentials: the material a
/// reload swaps into a running generation when only referenced files change.
#[derive(Clone, Default)]
pub(crate) struct Tls {
    pub(super) acceptor: Option<TlsAcceptor>,
    pub(super) connector: Option<TlsConnector>,
    pub(super) sasl: Option<UpstreamSasl>,
    /// Where each new connection's principal comes from: read at its
    /// handshake, like the acceptor.
    pub(super) authentication: Option<Arc<Authentication>>,
    /// The acceptor's verifier of client certificates (`clientCaFile`).
    pub(super) client_verifier: Option<Arc<dyn ClientCertVerifier>>,
    /// The digest of `clientCaFile`: a new one is a change of who is
    /// trusted, like a new `authentication`.
    pub(super) client_ca: Option<String>,
}

impl Tls {
    /// Built from a cluster's loaded material: fails on material rustls
    /// refuses, before anything running is touched.
    pub(crate) fn of(config: &VirtualCluster) -> Result<Tls, TlsError> {
        let (acceptor, client_verifier) = match &config.gateway.tls {
            Some(t) => {
                let (acceptor, verifier) = tls::acceptor(&t.material.0)?;
                (Some(acceptor), verifier)
            }
            None => (None, None),
        };
        let client_ca = (config.gateway.tls.as_ref())
            .and_then(|t| t.client_ca_file.as_ref())
            .map(|f| f.digest.clone());
        let connector = match &config.upstream.tls {
            Some(t) => Some(tls::connector(&t.material.0)?),
            None => None,
        };
        Ok(Tls {
            acceptor,
            connector,
            sasl: config.upstream.sasl.clone(),
            authentication: config.authentication.clone().map(Arc::new),
            client_verifier,
            client_ca,
        })
    }
}

/// Everything a reload may swap into a running generation, built (and
/// refused, when rustls refuses the material) before the commit.
#[derive(Clone)]
pub(crate) struct InPlace {
    pub(super) tls: Tls,
    pub(super) limits: Limits,
    pub(super) filters: Chain,
}

impl InPlace {
    /// What `config` would put in place.
    pub(crate) fn of(config: &VirtualCluster) -> Result<InPlace, TlsError> {
        Ok(InPlace {
            tls: Tls::of(config)?,
            limits: config.limits,
            filters: chain(config),
        })
    }
}

/// A filter chain; shared by every request that took it.
pub(crate) type Chain = Arc<Filters>;

/// The running filters of a cluster, as one value a reload swaps whole.
#[derive(Debug, Default)]
pub(crate) struct Filters {
    /// Filters that judge a request by its header, in order.
    pub(crate) head: Vec<Arc<dyn Filter>>,
    /// The topic policy, judging each topic a request names (after the
    /// header filters let it through).
    pub(crate) policy: Option<Arc<TopicPolicy>>,
    /// The `quota` filter's rates; what it measured lives on the cluster
    /// (`ClusterRuntime::quota`), outside the chain, so that swapping the
    /// chain resets no usage.
    pub(crate) quota: Option<QuotaSpec>,
}

/// The running filters `config` names.
pub(crate) fn chain(config: &VirtualCluster) -> Chain {
    Arc::new(Filters {
        head: config.filters.iter().filter_map(filter::build).collect(),
        // At most one of each per cluster (validated).
        policy: policy(config),
        quota: config.filters.iter().find_map(|f| match f {
            FilterSpec::Quota(spec) => Some(*spec),
            _ => None,
        }),
    })
}

/// The cluster's topic policy; a tenant's judges every request naming
/// topics, so that no topic id it was not taught passes
/// ([`TopicPolicy::guarding_ids`]).
fn policy(config: &VirtualCluster) -> Option<Arc<TopicPolicy>> {
    let tenant = config.tenancy.is_some();
    let policy = config.filters.iter().find_map(|f| match f {
        FilterSpec::TopicPolicy(p) => Some(TopicPolicy::new(p.clone())),
        _ => None,
    });
    match policy {
        Some(p) if tenant => Some(Arc::new(p.guarding_ids())),
        Some(p) => Some(Arc::new(p)),
        None => tenant.then(TopicPolicy::tenant_guard),
    }
}

/// The filter chain in force: each request takes it whole when it starts,
/// so a request is never judged by half of one chain and half of another.
pub(super) struct LiveChain(RwLock<Chain>);

impl LiveChain {
    pub(super) fn new(chain: Chain) -> Self {
        LiveChain(RwLock::new(chain))
    }

    /// The chain in force now.
    pub(super) fn load(&self) -> Chain {
        Arc::clone(
            &self
                .0
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Puts `chain` in force for every request that starts from now on.
    pub(super) fn store(&self, chain: Chain) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = chain;
    }
}

/// The cluster's `limits` as they are now: read without a lock on every
/// admission and every frame, stored whole by a reload.
#[derive(Debug)]
pub(super) struct LiveLimits {
    max_connections: AtomicU32,
    max_frame_bytes: AtomicU32,
    frame_timeout_ns: AtomicU64,
}

impl LiveLimits {
    pub(super) fn new(limits: Limits) -> Self {
        let live = LiveLimits {
            max_connections: AtomicU32::new(0),
            max_frame_bytes: AtomicU32::new(0),
            frame_timeout_ns: AtomicU64::new(0),
        };
        live.store(limits);
        live
    }

    /// Puts `limits` in force. Each value is read on its own, so a
    /// connection may see one new value a frame before another: every
    /// combination of the old and the new limits is a valid one.
    pub(super) fn store(&self, limits: Limits) {
        let ns = u64::try_from(limits.frame_timeout.as_nanos()).unwrap_or(u64::MAX);
        self.max_connections
            .store(limits.max_connections, Ordering::Relaxed);
        self.max_frame_bytes
            .store(limits.max_frame_bytes, Ordering::Relaxed);
        self.frame_timeout_ns.store(ns, Ordering::Relaxed);
    }

    /// The limits in force.
    pub(super) fn load(&self) -> Limits {
        Limits {
            max_connections: self.max_connections.load(Ordering::Relaxed),
            max_frame_bytes: self.max_frame_bytes.load(Ordering::Relaxed),
            frame_timeout: Duration::from_nanos(self.frame_timeout_ns.load(Ordering::Relaxed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_limits_are_loaded_back_whole() {
        let first = Limits::default();
        let live = LiveLimits::new(first);
        assert_eq!(live.load(), first);
        let second = Limits {
            max_connections: 7,
            max_frame_bytes: 1024,
            frame_timeout: Duration::from_millis(1500),
        };
        live.store(second);
        assert_eq!(live.load(), second);
    }
}
