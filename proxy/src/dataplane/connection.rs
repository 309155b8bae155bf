//! One client connection, proxied to one upstream broker.
//!
//! Two directions run side by side (`requests`, `responses`). Requests are
//! split into frames and their headers read; filters may answer a request
//! themselves; every request that expects a response takes an in-flight
//! slot *before* any of it is written upstream, and at most
//! [`MAX_IN_FLIGHT`] slots exist per connection, those the proxy answers
//! itself included (a large answer of its own takes a slot per 256 bytes):
//! past that the proxy stops reading from the client.
//! Responses are matched against the slots in order: those that carry
//! broker addresses (and ApiVersions) are held whole and rewritten,
//! everything else streams through. A protocol error closes this connection
//! only. How bytes are held is `buffer`'s business; how many, `budget`'s.

use rustls_pki_types::CertificateDer;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio_rustls::{Accept, StartHandshake};
use tracing::Instrument;

use super::closed;
use super::cluster::ClusterRuntime;
use super::cores::Accepted;
use super::direction::{ConnError, MAX_IN_FLIGHT};
use super::identity;
use super::inflight;
use super::inspect::Inspection;
use super::requests::{Who, forward_requests};
use super::responses::forward_responses;
use super::splice::{self, Copying, Splice};
use super::stream::{BoxIo, Stream};
use super::terminate;
use super::upstream;
use crate::config::identity::{Authentication, SaslTermination};

/// How long a client's TLS handshake may take (on the SNI port, the
/// ClientHello and the rest each).
pub(super) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A client connection as it reaches [`serve`].
#[derive(Debug)]
pub(crate) enum Incoming {
    /// Just accepted on a port of its own cluster.
    Tcp(Accepted),
    /// Accepted on the shared SNI port, its ClientHello read (which chose
    /// the cluster); the handshake goes on with the cluster's certificate.
    Sni(Box<StartHandshake<TcpStream>>),
}

/// What a listener port leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The bootstrap port: any upstream bootstrap server.
    Bootstrap,
    /// A broker port: that upstream node.
    Broker(i32),
}

/// Serves one accepted client connection to its end.
pub(crate) async fn serve(
    incoming: Incoming,
    peer: SocketAddr,
    cluster: Arc<ClusterRuntime>,
    role: Role,
) {
    let Some(_admitted) = cluster.admit() else {
        tracing::debug!(cluster = %cluster.name(), %peer, "connection refused: maxConnections or connectionsPerSecond reached");
        return;
    };
    // The client signals: a client at this address reached a broker port,
    // or, on the bootstrap port, is told where the brokers are.
    let told = match role {
        Role::Bootstrap => Some(peer.ip()),
        Role::Broker(_) => {
            cluster.signals.reached_broker(peer.ip());
            None
        }
    };
    // A span per connection only at debug level: at info, its slot and
    // formatted fields would be most of an idle connection's memory. The
    // events that matter at info name the connection themselves.
    let span = tracing::debug_span!(
        "conn",
        cluster = %cluster.name(),
        generation = cluster.generation,
        %peer,
        role = ?role,
    );
    async {
        // In this order, here and below, not at random: a random choice
        // costs a random number at every poll of the connection.
        // Set once the connection is served (its requests may be in
        // flight): a connection still in its handshake or its upstream
        // connect at the drain deadline had none.
        let serving = AtomicBool::new(false);
        let result = tokio::select! {
            biased;
            r = run(incoming, &cluster, role, (peer.ip(), told), &serving) => r,
            () = cluster.force.wait() => Err(ConnError::Forced),
        };
        let served = serving.load(Ordering::Acquire);
        if cluster.drain.is_set() {
            let forced = matches!(result, Err(ConnError::Forced)) && served;
            cluster.metrics.drained(forced);
        }
        let (name, generation) = (cluster.name(), cluster.generation);
        match result {
            Ok(()) => tracing::debug!("connection closed"),
            Err(ConnError::Forced) if !served => {
                tracing::debug!("connection closed at the drain deadline before it was served")
            }
            Err(ConnError::Forced) => {
                tracing::info!(cluster = %name, generation, %peer, role = ?role, "connection closed at the drain deadline with requests in flight")
            }
            Err(e) => {
                cluster.metrics.closed_on_error(e.reason().as_str());
                cluster.signals.closed_on_error(e.reason());
                closed::log(&cluster, &e, peer, role);
            }
        }
    }
    .instrument(span)
    .await;
}

async fn run(
    incoming: Incoming,
    cluster: &ClusterRuntime,
    role: Role,
    (peer, told): (IpAddr, Option<IpAddr>),
    serving: &AtomicBool,
) -> Result<(), ConnError> {
    // The handshake and the upstream connect are boxed: their state lives
    // only while they run, not in the connection's task for its whole life.
    // The epoch the principal is found under: a change from it on is
    // checked at the next request (revocation).
    let epoch = cluster.auth_epoch();
    let auth = cluster.authentication();
    let auth = auth.as_deref();
    // Who the client is, when the cluster's authentication says.
    let principal: OnceLock<Arc<str>> = OnceLock::new();
    // The certificate it was mapped from, checked again when the CA or
    // the rules change (revocation).
    let mut chain = None;
    let client = Box::pin(accept(incoming, cluster, auth, (&principal, &mut chain))).await?;
    // A cluster that terminates SASL authenticates the client first, and
    // then speaks to the upstream as itself (`upstream.sasl`, if any).
    let terminated = auth.and_then(|a| a.sasl.as_ref());
    let mut client = client;
    // When the session ends (KIP-368), counted from the authentication.
    let session = match terminated {
        Some(sasl) => Some(terminate_sasl(&mut client, sasl, (cluster, peer), &principal).await?),
        None => None,
    };
    // Inspection reads who the broker authenticates, later.
    let inspection = auth.and_then(|a| {
        let settings = a.sasl_inspection.as_ref()?;
        Some(Box::new(Inspection::new(
            a.required,
            &settings.principal_claim,
        )))
    });
    let mut upstream = Box::pin(connect_upstream(cluster, role)).await?;
    if terminated.is_some() {
        Box::pin(terminate::upstream_as_proxy(cluster, &mut upstream)).await?;
    }
    serving.store(true, Ordering::Release);
    let ends = Ends {
        cluster,
        peer,
        told,
        principal: &principal,
        chain: chain.as_deref(),
        epoch,
        inspection: inspection.as_deref(),
        terminated: session,
    };
    match (client, upstream) {
        // Plaintext on both sides: the sockets' own halves, through which
        // the bodies of streamed frames are spliced, in each direction
        // whose receiving peer `splice::towards` allows.
        (Stream::Plain(mut client), Stream::Plain(mut upstream)) => {
            let (to_client, to_upstream) = (splice::towards(&client), splice::towards(&upstream));
            let (crd, cwr) = client.split();
            let (urd, uwr) = upstream.split();
            // A writer that must not splice is `Copying`: its own type, so
            // the choice takes no room in the connection's task.
            match (to_client, to_upstream) {
                (true, true) => pipe(crd, cwr, urd, uwr, ends).await,
                (true, false) => pipe(crd, cwr, urd, Copying(uwr), ends).await,
                (false, true) => pipe(crd, Copying(cwr), urd, uwr, ends).await,
                (false, false) => pipe(crd, Copying(cwr), urd, Copying(uwr), ends).await,
            }
        }
        (client, upstream) => {
            let (client_rd, client_wr) = tokio::io::split(client.boxed());
            let (upstream_rd, upstream_wr) = tokio::io::split(upstream.boxed());
            pipe(client_rd, client_wr, upstream_rd, upstream_wr, ends).await
        }
    }
}

/// The client's stream: its TLS handshake finished (and its certificate's
/// principal found, under `auth`) when the cluster speaks TLS.
async fn accept(
    incoming: Incoming,
    cluster: &ClusterRuntime,
    auth: Option<&Authentication>,
    (principal, chain): (&OnceLock<Arc<str>>, &mut Option<Chain>),
) -> Result<Stream, ConnError> {
    Ok(match (incoming, cluster.acceptor()) {
        (Incoming::Tcp(accepted), Some(acceptor)) => {
            let tcp = accepted.register()?;
            let _ = tcp.set_nodelay(true);
            let (tls, who) = handshake(Box::pin(acceptor.accept(tcp)), auth).await?;
            if let Some((who, certificate)) = who {
                let _ = principal.set(who);
                *chain = Some(certificate);
            }
            Stream::Wrapped(tls)
        }
        (Incoming::Tcp(accepted), None) => {
            let tcp = accepted.register()?;
            let _ = tcp.set_nodelay(true);
            Stream::Plain(tcp)
        }
        (Incoming::Sni(start), Some(acceptor)) => {
            let _ = start.io.set_nodelay(true);
            let config = Arc::clone(acceptor.config());
            let (tls, who) = handshake(Box::pin((*start).into_stream(config)), auth).await?;
            if let Some((who, certificate)) = who {
                let _ = principal.set(who);
                *chain = Some(certificate);
            }
            Stream::Wrapped(tls)
        }
        // Validation requires TLS with SNI routing.
        (Incoming::Sni(_), None) => {
            return Err(ConnError::Tls(std::io::Error::other(
                "no TLS configuration for an SNI-routed cluster",
            )));
        }
    })
}

/// Authenticates a client of a cluster that terminates SASL (`sasl`) and
/// sets its principal: when its session ends (`None`: never).
async fn terminate_sasl(
    client: &mut Stream,
    sasl: &SaslTermination,
    (cluster, peer): (&ClusterRuntime, IpAddr),
    principal: &OnceLock<Arc<str>>,
) -> Result<Option<tokio::time::Instant>, ConnError> {
    let proved = match client {
        Stream::Plain(tcp) => Box::pin(terminate::authenticate(tcp, sasl, cluster, peer)).await,
        Stream::Wrapped(io) => Box::pin(terminate::authenticate(io, sasl, cluster, peer)).await,
    };
    let (user, lifetime) = proved?;
    let _ = principal.set(user);
    Ok(lifetime.map(|l| tokio::time::Instant::now() + l))
}

/// A client's certificate chain, its own first.
type Chain = Box<[CertificateDer<'static>]>;

/// Finishes a client's TLS handshake, within [`HANDSHAKE_TIMEOUT`], and
/// finds its principal under `auth`, with the chain it was mapped from: a
/// client without one is refused here, before anything is sent upstream,
/// when `auth` requires one.
async fn handshake(
    accept: Pin<Box<Accept<TcpStream>>>,
    auth: Option<&Authentication>,
) -> Result<(BoxIo, Option<(Arc<str>, Chain)>), ConnError> {
    let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, accept)
        .await
        .map_err(|_| ConnError::Tls(std::io::ErrorKind::TimedOut.into()))?
        .map_err(ConnError::Tls)?;
    let certificates = tls.get_ref().1.peer_certificates();
    let principal = match auth {
        Some(auth) => identity::identify(auth, certificates)?,
        None => None,
    };
    let found = principal.map(|p| {
        let chain: Chain = certificates
            .unwrap_or_default()
            .iter()
            .map(|c| c.clone().into_owned())
            .collect();
        (Arc::from(p), chain)
    });
    Ok((Box::new(tls), found))
}

async fn connect_upstream(cluster: &ClusterRuntime, role: Role) -> Result<Stream, ConnError> {
    Ok(match role {
        Role::Bootstrap => upstream::connect_bootstrap(cluster).await?.0,
        Role::Broker(id) => {
            let addr = upstream::node_address(cluster, id).await?;
            upstream::connect(cluster, &addr.host, addr.port).await?
        }
    })
}

/// What both directions of a connection share: its cluster, the client
/// address to tell the client signals of, the client's principal.
#[derive(Clone, Copy)]
struct Ends<'a> {
    cluster: &'a ClusterRuntime,
    peer: IpAddr,
    told: Option<IpAddr>,
    principal: &'a OnceLock<Arc<str>>,
    chain: Option<&'a [CertificateDer<'static>]>,
    epoch: u64,
    inspection: Option<&'a Inspection>,
    terminated: Option<Option<tokio::time::Instant>>,
}

/// Runs both directions of a connection to their end.
async fn pipe<CR, CW, UR, UW>(
    client_rd: CR,
    client_wr: CW,
    upstream_rd: UR,
    upstream_wr: UW,
    ends: Ends<'_>,
) -> Result<(), ConnError>
where
    CR: AsyncRead + Splice + Unpin,
    CW: AsyncWrite + Splice + Unpin,
    UR: AsyncRead + Splice + Unpin,
    UW: AsyncWrite + Splice + Unpin,
{
    // Bounded by the permits its slots carry.
    let (tx, rx) = inflight::queue();
    let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    // Both directions are made inside the block that runs them: made
    // outside and moved in, the connection's task kept room for them twice.
    let both = async move {
        let Ends {
            cluster,
            peer,
            told,
            principal,
            chain,
            epoch,
            inspection,
            terminated,
        } = ends;
        let who = Who {
            cluster,
            peer,
            principal,
            chain,
            epoch,
            inspection,
            terminated,
        };
        let inspected = inspection.map(|i| (i, principal));
        let requests = forward_requests(client_rd, upstream_wr, tx, permits, who);
        let responses = forward_responses(upstream_rd, client_wr, rx, (cluster, told), inspected);
        tokio::pin!(requests, responses);
        tokio::select! {
            biased;
            r = &mut requests => {
                r?;
                // The client is done sending: answer what is still in flight.
                responses.await
            }
            r = &mut responses => r,
        }
    };
    tokio::pin!(both);
    Absorbed::new(both).await
}

mod absorbed;
use absorbed::Absorbed;

#[cfg(test)]
mod tests;
