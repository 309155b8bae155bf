//! The shared SNI port: one listener for every SNI-routed cluster on an
//! address. Each connection's ClientHello is read first; its server name
//! picks the cluster generation and the role (the bootstrap name, or a
//! broker name and so its node id) from the listener's [`SniTable`], and
//! the connection then goes on exactly as on a port of its own, the TLS
//! handshake finished with that cluster's certificate.
//!
//! The table is built whole at each commit from the current generations
//! and swapped in: a cluster a reload does not touch keeps its entries
//! (the same generation), so its clients never notice. A connection no
//! name routes is closed alone, logged and counted
//! (`sluice_sni_unrouted_connections_total{reason}`): `unknown` for a name
//! no cluster has, `missing` for a ClientHello without one, and for a
//! client that does not speak TLS at all (a plaintext Kafka client).

use std::net::SocketAddr;

use tokio::sync::watch;
use tokio_rustls::LazyConfigAcceptor;

use super::connection::{self, HANDSHAKE_TIMEOUT, Incoming};
use super::cores::Accepted;
pub(crate) use super::routes::SniTable;
use super::routes::{Route, Routes};
use crate::metrics::SniUnrouted;

/// The first byte of a TLS handshake record (a ClientHello comes in one).
const TLS_HANDSHAKE: u8 = 0x16;

/// Why a connection was not routed, as the metric's `reason` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unrouted {
    /// A server name no cluster on the port has.
    Unknown,
    /// No server name: a ClientHello without one, or no TLS at all.
    Missing,
}

impl Unrouted {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Unrouted::Unknown => "unknown",
            Unrouted::Missing => "missing",
        }
    }
}

/// Reads the ClientHello of a connection on an SNI port and hands the
/// connection to the generation its server name leads to.
pub(crate) async fn serve(
    accepted: Accepted,
    peer: SocketAddr,
    routes: watch::Receiver<Routes>,
    unrouted: SniUnrouted,
) {
    let tcp = match accepted.register() {
        Ok(tcp) => tcp,
        Err(e) => {
            tracing::warn!(%peer, error = %e, "connection on the SNI port closed: cannot register its socket");
            return;
        }
    };
    let listener = tcp.local_addr().ok();
    let unroute = |reason: Unrouted, why: &str, server_name: Option<&str>| {
        unrouted.inc(reason.as_str());
        tracing::info!(
            %peer,
            listener = ?listener,
            server_name = server_name.unwrap_or_default(),
            reason = reason.as_str(),
            why,
            "connection on the SNI port closed: no cluster for it"
        );
    };
    // A load balancer's health check connects and closes without a word:
    // not worth a count. A client that speaks anything but TLS is.
    let mut first = [0u8; 1];
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, tcp.peek(&mut first)).await {
        Ok(Ok(0)) | Ok(Err(_)) => {
            tracing::debug!(%peer, "connection on the SNI port closed before a ClientHello");
            return;
        }
        Err(_) => return unroute(Unrouted::Missing, "no ClientHello in time", None),
        Ok(Ok(_)) if first[0] != TLS_HANDSHAKE => {
            return unroute(Unrouted::Missing, "not TLS", None);
        }
        Ok(Ok(_)) => {}
    }
    let acceptor = LazyConfigAcceptor::new(rustls::server::Acceptor::default(), tcp);
    let start = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor).await {
        Ok(Ok(start)) => start,
        Ok(Err(e)) => return unroute(Unrouted::Missing, &e.to_string(), None),
        Err(_) => return unroute(Unrouted::Missing, "no ClientHello in time", None),
    };
    let Some(name) = start.client_hello().server_name().map(str::to_owned) else {
        return unroute(Unrouted::Missing, "the ClientHello names no server", None);
    };
    let Some(route) = lookup(routes, &name).await else {
        return unroute(Unrouted::Unknown, "no cluster has this name", Some(&name));
    };
    let connections = route.cluster.connections.clone();
    connections.spawn(connection::serve(
        Incoming::Sni(Box::new(start)),
        peer,
        route.cluster,
        route.role,
    ));
}

/// Looks a name up in the listener's table, waiting for the first table
/// when the listener was started by a commit that has not finished yet.
async fn lookup(mut routes: watch::Receiver<Routes>, name: &str) -> Option<Route> {
    let table = {
        let ready = routes.wait_for(|r| !matches!(r, Routes::Sni(None)));
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, ready).await {
            Ok(Ok(r)) => r.clone(),
            _ => return None,
        }
    };
    match table {
        Routes::Sni(Some(table)) => table.route(name),
        // The port went back to port-per-broker routing meanwhile.
        Routes::Port(_) | Routes::Sni(None) => None,
    }
}
