//! The steps of the front-door check, on the proxy's own Kafka client
//! (`dataplane::client`) and its dialer (`dataplane::upstream::dial`), each
//! within the door's timeout.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use futures_util::future::join_all;
use sluice_admin_api::analysis::{DoorStep, FrontDoor};

use super::Door;
use crate::dataplane::check::cause;
use crate::dataplane::client::{metadata, metadata_version};
use crate::dataplane::stream::BoxIo;
use crate::dataplane::upstream::{Tls, To, UpstreamError, dial};

/// The bootstrap step's name.
pub(super) const BOOTSTRAP: &str = "bootstrap";
/// The metadata step's name.
pub(super) const METADATA: &str = "metadata";
/// The brokers step's name.
pub(super) const BROKERS: &str = "brokers";

/// A broker as Metadata advertises it.
struct Broker {
    node: i32,
    host: String,
    port: i32,
}

impl fmt::Display for Broker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "node {} at {}",
            self.node,
            address(&self.host, self.port)
        )
    }
}

/// The check: bootstrap, metadata on the same connection, then brokers.
pub(super) async fn run(door: &Door) -> FrontDoor {
    let mut steps = Vec::new();
    let (host, port) = door.bootstrap();
    let at = address(&host, port);
    let (mut io, version) = match hello(door, &host, port).await {
        Ok(answered) => {
            steps.push(ok(BOOTSTRAP, &at));
            if door.authenticated {
                // Metadata needs SASL, and the check has no client's
                // credentials: asking would only make the broker close the
                // connection (and the proxy log it).
                return FrontDoor { steps };
            }
            answered
        }
        Err(e) => {
            steps.push(failed(BOOTSTRAP, &at, e));
            return FrontDoor { steps };
        }
    };
    let brokers = match within(door.timeout, advertised(&mut io, version)).await {
        Ok(brokers) => brokers,
        Err(e) => {
            steps.push(failed(METADATA, &at, e));
            return FrontDoor { steps };
        }
    };
    drop(io);
    let mut step = ok(METADATA, &at);
    step.advertised = brokers.iter().map(ToString::to_string).collect();
    steps.push(step);
    steps.push(reach(door, &brokers).await);
    FrontDoor { steps }
}

/// Connect (the name resolved as a client resolves it), TLS when the
/// gateway has it (the name verified and sent as SNI is `host`), then
/// ApiVersions: the connection and the Metadata version to use on it.
async fn hello(door: &Door, host: &str, port: u16) -> Result<(BoxIo, i16), String> {
    let timeout = door.timeout;
    within(timeout, async {
        let tls = door.tls.as_ref().map(|t| Tls {
            connector: &t.connector,
            server_name: None,
        });
        let stream = dial(tls, host, port, timeout, To::Own)
            .await
            .map_err(|e| reason(e, timeout))?;
        let mut io = stream.boxed();
        let version = metadata_version(&mut io).await.map_err(|e| e.to_string())?;
        Ok((io, version))
    })
    .await
}

/// Metadata for no topic: the brokers advertised, by node id.
async fn advertised(io: &mut BoxIo, version: i16) -> Result<Vec<Broker>, String> {
    let answer = metadata(io, version).await.map_err(|e| e.to_string())?;
    let mut brokers: Vec<Broker> = answer
        .brokers
        .iter()
        .map(|b| Broker {
            node: b.node_id.0,
            host: b.host.to_string(),
            port: b.port,
        })
        .collect();
    if brokers.is_empty() {
        return Err("Metadata advertises no broker".to_owned());
    }
    brokers.sort_by_key(|b| b.node);
    Ok(brokers)
}

/// Every advertised broker at once: ok only if each answers.
async fn reach(door: &Door, brokers: &[Broker]) -> DoorStep {
    let at = brokers
        .iter()
        .map(|b| address(&b.host, b.port))
        .collect::<Vec<_>>()
        .join(", ");
    let attempts = brokers.iter().map(|b| async move {
        let result = match u16::try_from(b.port) {
            Ok(port) => hello(door, &b.host, port).await.map(drop),
            Err(_) => Err("the advertised port is not a TCP port".to_owned()),
        };
        result.err().map(|e| format!("{b}: {e}"))
    });
    let failures: Vec<String> = join_all(attempts).await.into_iter().flatten().collect();
    if failures.is_empty() {
        ok(BROKERS, &at)
    } else {
        failed(BROKERS, &at, failures.join("; "))
    }
}

/// `attempt` within `timeout`, else "no answer within …".
async fn within<T>(
    timeout: Duration,
    attempt: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or_else(|_| Err(no_answer(timeout)))
}

fn no_answer(timeout: Duration) -> String {
    format!(
        "no answer within {}",
        sluice_config::types::format_duration(timeout)
    )
}

/// Why a connection failed, as the upstream check words it (`connection
/// refused`, `TLS handshake failed: <rustls>`).
fn reason(e: UpstreamError, timeout: Duration) -> String {
    match e {
        UpstreamError::Timeout(_) => no_answer(timeout),
        other => cause(other).to_string(),
    }
}

/// `host:port`, IPv6 addresses in brackets.
fn address(host: &str, port: impl fmt::Display) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn ok(step: &str, at: &str) -> DoorStep {
    DoorStep {
        step: step.to_owned(),
        address: at.to_owned(),
        ok: true,
        error: None,
        advertised: Vec::new(),
    }
}

fn failed(step: &str, at: &str, error: String) -> DoorStep {
    DoorStep {
        error: Some(error),
        ok: false,
        ..ok(step, at)
    }
}
