//! The upstream check a reload runs before it commits: for a cluster it adds,
//! or whose `upstream` it changes, the proxy talks to the new upstream the
//! way its data plane will (TCP, TLS with the configured trust, server name
//! and client certificate, then ApiVersions, SASL with the proxy's own
//! credentials when `upstream.sasl` gives them, and Metadata), so that a
//! configuration that validates but cannot work (nothing listens, a CA that
//! does not match the brokers, a wrong `serverName`) fails the reload with
//! nothing changed instead of reaching every pod.
//!
//! Every bootstrap server is tried at once, each within
//! `upstream.checkTimeout`; the check passes when one of them answers
//! Metadata with at least one broker. It runs outside the engine's lock.

use std::fmt;
use std::time::Duration;

use sluice_config::model::VirtualCluster;
use sluice_config::sasl::UpstreamSasl;

use super::client::{Step, hung_up, metadata, metadata_version};
use super::sasl::authenticate;
use super::stream::BoxIo;
use super::tls;
use super::upstream::{Tls, To, UpstreamError, dial};

/// What a passed check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Passed {
    /// Metadata answered: this many brokers, from this server.
    Brokers {
        /// The bootstrap server that answered.
        server: String,
        /// Brokers in its Metadata answer.
        brokers: usize,
    },
    /// ApiVersions answered, and the broker closed the connection at
    /// Metadata: it requires SASL authentication and the proxy has no
    /// credentials of its own for it, so the check ends after ApiVersions.
    SaslRequired {
        /// The bootstrap server that answered ApiVersions.
        server: String,
    },
}

/// Why a cluster's upstream failed its check: per bootstrap server, the
/// address and the cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckFailed {
    /// The virtual cluster.
    pub(crate) cluster: String,
    /// Each bootstrap server tried, with why it failed.
    pub(crate) servers: Vec<(String, Cause)>,
}

impl CheckFailed {
    /// The check itself could not run (no runtime, say): every server fails
    /// with `why`.
    pub(crate) fn internal(cluster: &str, why: &str) -> Self {
        CheckFailed {
            cluster: cluster.to_owned(),
            servers: vec![("(all)".to_owned(), Cause::Kafka(why.to_owned()))],
        }
    }
}

impl fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "virtual cluster {}: upstream check failed: ",
            self.cluster
        )?;
        for (i, (server, cause)) in self.servers.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{server}: {cause}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CheckFailed {}

/// Why one bootstrap server failed the check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Cause {
    /// Nothing listens there.
    #[error("connection refused")]
    Refused,
    /// No answer within `upstream.checkTimeout` (connect, TLS or a request).
    #[error("no answer within {0}")]
    Timeout(String),
    /// TCP failed otherwise (no route, unknown host, reset).
    #[error("connect: {0}")]
    Connect(String),
    /// The TLS handshake failed; the text names the certificate problem.
    #[error("TLS handshake failed: {0}")]
    Tls(String),
    /// The broker answered with a Kafka error, or could not be understood.
    #[error("{0}")]
    Kafka(String),
    /// The metadata lists no broker.
    #[error("Metadata lists no broker")]
    NoBrokers,
    /// The proxy's own SASL authentication failed (`upstream.sasl`).
    #[error("SASL {mechanism} authentication of the proxy failed: {why}")]
    Sasl {
        /// `upstream.sasl.mechanism`.
        mechanism: String,
        /// Why, without the password.
        why: String,
    },
}

/// Checks `cluster`'s upstream (see the module documentation).
pub(crate) async fn check(cluster: &VirtualCluster) -> Result<Passed, CheckFailed> {
    let upstream = &cluster.upstream;
    let failed = |servers| CheckFailed {
        cluster: cluster.name.to_string(),
        servers,
    };
    let connector = match &upstream.tls {
        Some(t) => match tls::connector(&t.material.0) {
            Ok(c) => Some(c),
            Err(e) => {
                let cause = Cause::Tls(e.to_string());
                let all = upstream
                    .bootstrap_servers
                    .iter()
                    .map(|s| (s.to_string(), cause.clone()))
                    .collect();
                return Err(failed(all));
            }
        },
        None => None,
    };
    let tls = connector.as_ref().map(|connector| Tls {
        connector,
        server_name: upstream.tls.as_ref().and_then(|t| t.server_name.as_deref()),
    });
    let timeout = upstream.check_timeout;
    let sasl = upstream.sasl.as_ref();
    let attempts = upstream.bootstrap_servers.iter().map(|server| async move {
        let host = server.host.to_string();
        let name = server.to_string();
        let attempt = one(tls, sasl, &host, server.port.get(), timeout);
        let result = tokio::time::timeout(timeout, attempt)
            .await
            .unwrap_or_else(|_| Err(Cause::Timeout(humanize(timeout))));
        (name, result)
    });
    let results = futures_util::future::join_all(attempts).await;
    let mut failures = Vec::new();
    let mut sasl = None;
    for (server, result) in results {
        match result {
            Ok(Some(brokers)) => return Ok(Passed::Brokers { server, brokers }),
            Ok(None) => sasl = sasl.or(Some(server)),
            Err(cause) => failures.push((server, cause)),
        }
    }
    match sasl {
        Some(server) => Ok(Passed::SaslRequired { server }),
        None => Err(failed(failures)),
    }
}

/// One bootstrap server: `Some(brokers)` when Metadata answered, `None`
/// when the broker closed the connection after ApiVersions (SASL) and the
/// proxy has no credentials of its own.
async fn one(
    tls: Option<Tls<'_>>,
    sasl: Option<&UpstreamSasl>,
    host: &str,
    port: u16,
    timeout: Duration,
) -> Result<Option<usize>, Cause> {
    let mut io: BoxIo = dial(tls, host, port, timeout, To::Broker)
        .await
        .map_err(cause)?
        .boxed();
    let version = metadata_version(&mut io).await.map_err(kafka)?;
    if let Some(sasl) = sasl {
        authenticate(&mut io, sasl).await.map_err(|e| Cause::Sasl {
            mechanism: sasl.mechanism.to_string(),
            why: e.to_string(),
        })?;
    }
    match metadata(&mut io, version).await {
        Ok(m) if m.brokers.is_empty() => Err(Cause::NoBrokers),
        Ok(m) => Ok(Some(m.brokers.len())),
        Err(Step::Metadata(e)) if sasl.is_none() && hung_up(&e) => Ok(None),
        Err(e) => Err(kafka(e)),
    }
}

pub(crate) fn cause(e: UpstreamError) -> Cause {
    match e {
        UpstreamError::Connect { source, .. }
            if source.kind() == std::io::ErrorKind::ConnectionRefused =>
        {
            Cause::Refused
        }
        UpstreamError::Connect { source, .. } => Cause::Connect(source.to_string()),
        UpstreamError::Timeout(_) => Cause::Timeout("the connect timeout".to_owned()),
        UpstreamError::Tls { source, .. } => Cause::Tls(tls_problem(&source)),
        other => Cause::Connect(other.to_string()),
    }
}

/// The certificate problem behind a failed handshake, as rustls names it.
fn tls_problem(e: &std::io::Error) -> String {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .map_or_else(|| e.to_string(), ToString::to_string)
}

fn kafka(e: Step) -> Cause {
    match e {
        Step::ApiVersions(io) | Step::Metadata(io) if is_timeout(&io) => {
            Cause::Timeout("a request".to_owned())
        }
        other => Cause::Kafka(other.to_string()),
    }
}

fn is_timeout(e: &str) -> bool {
    e.contains("timed out")
}

fn humanize(d: Duration) -> String {
    sluice_config::types::format_duration(d)
}

#[cfg(test)]
pub(crate) mod hostile;
#[cfg(test)]
mod tests;
