//! One request whose head is read, judged by the filter chain in force
//! when it starts (the whole request by that one chain): counted by the
//! quota, then forwarded, answered by the proxy, or split by the topic
//! policy.

use std::future::Future;
use std::sync::Arc;

use sluice_config::policy::{Operation, operation_of};
use sluice_kafka::frame::RequestHeader;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

use super::super::cluster::ClusterRuntime;
use super::super::direction::{ConnError, Slot};
use super::super::inflight::Sender;
use super::super::splice::Splice;
use super::super::tenant;
use super::super::throttle;
use super::SaslSession;
use super::sessions::{FETCH, Session, watching};
use super::{Request, Way, decide};
use crate::dataplane::inspect::Inspection;
use crate::dataplane::live::Filters;
use crate::filter::Verdict;
use crate::filter::topic_policy::TopicPolicy;

/// What every request of a connection shares: its in-flight slots, the
/// response side's queue, the cluster, the client's principal.
pub(super) struct Shared<'a> {
    pub(super) permits: &'a Arc<Semaphore>,
    pub(super) tx: &'a Sender<Slot>,
    pub(super) cluster: &'a ClusterRuntime,
    /// The connection's principal, if it has one.
    pub(super) principal: Option<&'a Arc<str>>,
    /// The client's address.
    pub(super) peer: std::net::IpAddr,
    /// SASL inspection, where the cluster's authentication asks for it.
    pub(super) inspection: Option<&'a Inspection>,
    /// The session of a client the proxy authenticated itself.
    pub(super) session: Option<&'a mut SaslSession>,
}

impl<R, W, S> Way<'_, R, W, S>
where
    R: AsyncRead + Splice + Unpin,
    W: AsyncWrite + Splice + Unpin,
    S: Future<Output = ()> + Unpin,
{
    /// Takes the request `header` (of `total` bytes) on its way. True when
    /// the generation drained before any of it went.
    pub(super) async fn take(
        mut self,
        header: RequestHeader,
        total: usize,
        conn: Shared<'_>,
    ) -> Result<bool, ConnError> {
        let cluster = conn.cluster;
        let chain = cluster.filters();
        let verdict = verdict(&chain, cluster, &header);
        let metered = match chain.quota {
            Some(spec) if verdict == Verdict::Forward && throttle::counts(&header) => {
                // Held until its turn: `None` when the drain came first.
                match Box::pin(self.meter(&spec, &conn, &header, total)).await? {
                    Some(metered) => metered,
                    None => return Ok(true),
                }
            }
            _ => None,
        };
        let policed = policed(chain.policy.as_ref(), header.api_key);
        drop(chain);
        // A Fetch session the consume rules changed under starts again
        // (`sessions`); free while no policy looks at Fetch.
        let fetch = header.api_key == FETCH && verdict == Verdict::Forward;
        let policy = policed.as_ref().map(|(p, _)| p).filter(|_| fetch);
        let sessions = &cluster.metrics.fetch_sessions;
        let session = if fetch && watching(sessions, policy) {
            let principal = conn.principal.map(|p| &**p);
            Box::pin(self.session(&header, total, policy, sessions, principal)).await?
        } else {
            Session::Goes
        };
        let (reset, opens) = session.split();
        let request = Request {
            header,
            total,
            permits: conn.permits,
            tx: conn.tx,
            cluster,
            principal: conn.principal,
            peer: conn.peer,
            metered,
            opens,
            inspects: false,
        };
        if let Some(session) = conn.session
            && Inspection::reads(&request.header)
        {
            return Box::pin(self.reauthenticate(request, session, conn.peer)).await;
        }
        if let Some(inspection) = conn.inspection {
            inspection.admits(&request.header, conn.principal)?;
        }
        if let Some(inspection) = conn.inspection
            && verdict == Verdict::Forward
            && Inspection::reads(&request.header)
        {
            return Box::pin(self.inspected(request, inspection)).await;
        }
        match verdict {
            Verdict::Forward if reset => Box::pin(self.reset_session(request)).await,
            Verdict::Forward => match policed {
                Some((policy, Operation::Produce)) if request.header.api_key == PRODUCE => {
                    Box::pin(self.produce(request, policy)).await
                }
                Some((policy, Operation::Consume)) if fetch => {
                    Box::pin(self.fetch(request, policy)).await
                }
                Some((policy, op)) => Box::pin(self.police(request, policy, op)).await,
                None => {
                    cluster.signals.forwarded();
                    Box::pin(self.forward(request)).await
                }
            },
            Verdict::Deny { error_code } => Box::pin(self.deny(request, error_code)).await,
        }
    }
}

/// The header filters' verdict on a request; a tenant's for the shared
/// cluster's administration is refused (a tenant is not its admin).
fn verdict(chain: &Filters, cluster: &ClusterRuntime, header: &RequestHeader) -> Verdict {
    match decide(chain, header) {
        Verdict::Forward if tenant::refuses(cluster, header.api_key) => Verdict::Deny {
            error_code: tenant::CLUSTER_AUTHORIZATION_FAILED,
        },
        verdict => verdict,
    }
}

/// Produce's API key: a Produce request under a policy streams where it
/// can (other APIs of the produce operation, on transactional ids, do not).
const PRODUCE: i16 = 0;

/// The policy that judges a request of `api_key`, and as which operation:
/// the cluster's, where it looks at that API; and for an administrative
/// request, whatever the policy (one that allows everything where there is
/// none), for the audit (they are rare). `None`: the request goes as it is.
fn policed(
    policy: Option<&Arc<TopicPolicy>>,
    api_key: i16,
) -> Option<(Arc<TopicPolicy>, Operation)> {
    let audited = operation_of(api_key).filter(|op| op.audited());
    match policy {
        Some(p) => (p.polices(api_key).or(audited)).map(|op| (Arc::clone(p), op)),
        None => audited.map(|op| (TopicPolicy::open(), op)),
    }
}
