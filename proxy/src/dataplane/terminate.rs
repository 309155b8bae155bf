//! SASL terminated by the proxy (`authentication.sasl`): a client's
//! ApiVersions, SaslHandshake and SaslAuthenticate are answered here,
//! before the connection has an upstream, and the user it proves it is
//! becomes its principal. Nothing of the client reaches the upstream before
//! that; any other request first closes the connection, as a broker's SASL
//! listener does.
//!
//! The exchange is bounded: frames of at most [`MAX_FRAME`] bytes, at most
//! [`MAX_FRAMES`] of them, all within [`AUTH_TIMEOUT`]. A failed attempt is
//! answered after a delay that grows with the failures from the same
//! address (`failures`), with the same error and words whatever failed.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestHeader as KHeader, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use sluice_kafka::encode;
use sluice_kafka::frame::{FrameError, RequestHeader, request_frame_size, request_header};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::cluster::ClusterRuntime;
use super::direction::ConnError;
use super::oauth;
use super::sasl;
use super::scram_server::{AuthError, Pending, failed, nonce, plain, scram_first, secret};
use super::stream::Stream;
use super::upstream::UpstreamError;
use crate::config::identity::{SaslTermination, ScramUsers};
use crate::config::sasl::SaslMechanism;

mod versions;

pub(super) use super::refused::Unauthenticated;

/// Largest frame read before authentication (a SCRAM message is a few
/// hundred bytes; a PLAIN one, two names and a password).
const MAX_FRAME: u32 = 16 * 1024;
/// Most frames before authentication: ApiVersions (twice, if the client
/// retries at a lower version), SaslHandshake, and two SaslAuthenticate.
const MAX_FRAMES: usize = 8;
/// The whole exchange's time.
const AUTH_TIMEOUT: Duration = Duration::from_secs(30);

/// Kafka's error codes.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
const ILLEGAL_SASL_STATE: i16 = 34;
const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// Authenticates the client on `io` under `sasl`: the principal it proved,
/// and how long its session holds (`None`: for the connection's life).
pub(super) async fn authenticate<S>(
    io: &mut S,
    sasl: &SaslTermination,
    cluster: &ClusterRuntime,
    peer: IpAddr,
) -> Result<(Arc<str>, Option<Duration>), ConnError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let at = At {
        sasl,
        cluster,
        peer,
    };
    let exchange = Exchange::default();
    match tokio::time::timeout(AUTH_TIMEOUT, exchange.run(io, &at)).await {
        Ok(result) => result,
        Err(_) => Err(ConnError::Unauthenticated(Unauthenticated::Exchange(
            format!("not authenticated within {AUTH_TIMEOUT:?}"),
        ))),
    }
}

/// Where an exchange happens: under which settings, for which cluster and
/// client address.
pub(super) struct At<'a> {
    pub(super) sasl: &'a SaslTermination,
    pub(super) cluster: &'a ClusterRuntime,
    pub(super) peer: IpAddr,
}

/// One SASL exchange (the first, or a re-authentication, KIP-368): the
/// mechanism chosen and SCRAM's state between its two messages.
#[derive(Default)]
pub(super) struct Exchange {
    mechanism: Option<SaslMechanism>,
    pending: Option<Pending>,
}

/// Where the exchange stands after a SaslAuthenticate was answered.
pub(super) enum Outcome {
    /// Waiting for the client's next message.
    More,
    /// Authenticated as this user, for this long (`None`: for ever).
    Proved(String, Option<Duration>),
    /// Refused (the answer says so).
    Refused(Unauthenticated),
}

/// What one SaslAuthenticate came to.
enum Step {
    /// Answer and wait for the next message.
    More(Vec<u8>),
    /// Authenticated as this user, until a token's expiry if it had one;
    /// the last message to answer.
    Done(String, Vec<u8>, Option<SystemTime>),
}

impl Exchange {
    async fn run<S>(
        mut self,
        io: &mut S,
        at: &At<'_>,
    ) -> Result<(Arc<str>, Option<Duration>), ConnError>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        for _ in 0..MAX_FRAMES {
            let frame = read_frame(io).await?;
            let header = request_header(&frame)?;
            let (answer, outcome) = if header.api_key == ApiKey::ApiVersions as i16 {
                let (version, corr) = (header.api_version, header.correlation_id);
                let answer = versions::answer(at.cluster, version, corr).await?;
                (answer, Outcome::More)
            } else {
                self.frame(&frame, &header, at).await?
            };
            io.write_all(&answer).await?;
            io.flush().await?;
            match outcome {
                Outcome::More => {}
                Outcome::Proved(user, lifetime) => return Ok((Arc::from(user), lifetime)),
                Outcome::Refused(why) => {
                    linger(io).await;
                    return Err(ConnError::Unauthenticated(why));
                }
            }
        }
        Err(exchange(format!(
            "more than {MAX_FRAMES} frames without authenticating"
        )))
    }

    /// Answers a SaslHandshake or SaslAuthenticate (any other request is
    /// refused: it closes the connection); where that leaves the exchange.
    pub(super) async fn frame(
        &mut self,
        frame: &Bytes,
        header: &RequestHeader,
        at: &At<'_>,
    ) -> Result<(Bytes, Outcome), ConnError> {
        let (version, corr) = (header.api_version, header.correlation_id);
        match ApiKey::try_from(header.api_key) {
            Ok(ApiKey::SaslHandshake) => {
                let answer = self.handshake(frame, version, corr, at)?;
                Ok((answer, Outcome::More))
            }
            Ok(ApiKey::SaslAuthenticate) => {
                let done = self.authenticate(frame, version, corr, at).await?;
                if !matches!(done.1, Outcome::More) {
                    // Ended: a re-authentication starts afresh.
                    *self = Exchange::default();
                }
                Ok(done)
            }
            _ => Err(skipped(sluice_kafka::api_name(header.api_key))),
        }
    }

    /// Answers SaslHandshake: the mechanism chosen, or the ones offered.
    fn handshake(
        &mut self,
        frame: &Bytes,
        version: i16,
        corr: i32,
        at: &At<'_>,
    ) -> Result<Bytes, ConnError> {
        if version < 1 {
            // v0 frames the SASL tokens without Kafka headers; ApiVersions
            // offers v1 on, so only a client that ignores it sends v0.
            return Err(exchange(
                "SaslHandshake v0 (unframed SASL) is not served".into(),
            ));
        }
        let request: SaslHandshakeRequest = body(frame, ApiKey::SaslHandshake, version)?;
        let offered = &at.sasl.mechanisms;
        let chosen = offered
            .iter()
            .find(|m| m.as_str() == request.mechanism.as_str())
            .copied();
        let mut response = SaslHandshakeResponse::default();
        response.mechanisms = offered
            .iter()
            .map(|m| StrBytes::from_static_str(m.as_str()))
            .collect();
        match chosen {
            Some(m) if self.mechanism.is_none() => self.mechanism = Some(m),
            Some(_) => response.error_code = ILLEGAL_SASL_STATE,
            None => response.error_code = UNSUPPORTED_SASL_MECHANISM,
        }
        Ok(encode::response(
            ApiKey::SaslHandshake,
            version,
            corr,
            &response,
        )?)
    }

    /// Takes one SaslAuthenticate: its answer, and where that leaves it.
    async fn authenticate(
        &mut self,
        frame: &Bytes,
        version: i16,
        corr: i32,
        at: &At<'_>,
    ) -> Result<(Bytes, Outcome), ConnError> {
        let Some(mechanism) = self.mechanism else {
            return Err(exchange("SaslAuthenticate before SaslHandshake".into()));
        };
        let request: SaslAuthenticateRequest = body(frame, ApiKey::SaslAuthenticate, version)?;
        let mut response = SaslAuthenticateResponse::default();
        match self.step(mechanism, &request.auth_bytes, at) {
            Ok(Step::More(bytes)) => {
                response.auth_bytes = Bytes::from(bytes);
                let frame = encode::response(ApiKey::SaslAuthenticate, version, corr, &response)?;
                Ok((frame, Outcome::More))
            }
            Ok(Step::Done(user, bytes, expires)) => {
                response.auth_bytes = Bytes::from(bytes);
                // KIP-368: how long the session holds (v1 on); 0: for ever.
                let lifetime = oauth::session_lifetime(at.sasl.session_lifetime, expires);
                response.session_lifetime_ms =
                    lifetime.map_or(0, |l| i64::try_from(l.as_millis()).unwrap_or(i64::MAX));
                let frame = encode::response(ApiKey::SaslAuthenticate, version, corr, &response)?;
                at.cluster.auth_failures.succeeded(at.peer);
                Ok((frame, Outcome::Proved(user, lifetime)))
            }
            Err((user, why)) => {
                // Slowed, then answered alike whatever failed.
                tokio::time::sleep(at.cluster.auth_failures.failed(at.peer)).await;
                response.error_code = SASL_AUTHENTICATION_FAILED;
                response.error_message = Some(StrBytes::from_string(failed(mechanism)));
                let frame = encode::response(ApiKey::SaslAuthenticate, version, corr, &response)?;
                let why = Unauthenticated::Failed {
                    mechanism,
                    user,
                    why,
                };
                Ok((frame, Outcome::Refused(why)))
            }
        }
    }

    /// One step of `mechanism` on the client's `message`; on failure, the
    /// user it claimed (for the log) and why.
    fn step(
        &mut self,
        mechanism: SaslMechanism,
        message: &[u8],
        at: &At<'_>,
    ) -> Result<Step, (String, AuthError)> {
        // The file unread (a validator that reads no files built this
        // configuration): every attempt fails.
        let empty = ScramUsers::default();
        let users = at.sasl.users.0.as_ref().as_ref().unwrap_or(&empty);
        let secret = secret();
        let unnamed = |why| (String::new(), why);
        match mechanism {
            SaslMechanism::Plain => {
                let user = plain(users, message, secret).map_err(unnamed)?;
                return Ok(Step::Done(user, Vec::new(), None));
            }
            SaslMechanism::OAuthBearer => {
                let (user, expires) = oauth::authenticate(at.sasl, message)?;
                return Ok(Step::Done(user, Vec::new(), Some(expires)));
            }
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {}
        }
        match self.pending.take() {
            None => {
                let (first, pending) =
                    scram_first(mechanism, users, message, &nonce(), secret).map_err(unnamed)?;
                self.pending = Some(pending);
                Ok(Step::More(first.into_bytes()))
            }
            Some(pending) => {
                let user = pending.user().to_owned();
                let (last, proved) = pending.finish(message).map_err(|why| (user, why))?;
                Ok(Step::Done(proved, last.into_bytes(), None))
            }
        }
    }
}

/// Authenticates a client's upstream connection as the proxy
/// (`upstream.sasl`), for a client the proxy authenticated itself.
pub(super) async fn upstream_as_proxy(
    cluster: &ClusterRuntime,
    upstream: &mut Stream,
) -> Result<(), ConnError> {
    let Some(sasl) = cluster.sasl() else {
        return Ok(());
    };
    let done = match upstream {
        Stream::Plain(tcp) => sasl::authenticate(tcp, &sasl).await,
        Stream::Wrapped(io) => sasl::authenticate(io, &sasl).await,
    };
    done.map_err(|source| {
        ConnError::Upstream(UpstreamError::Auth {
            cluster: cluster.name().to_owned(),
            server: "a broker".to_owned(),
            mechanism: sasl.mechanism,
            source,
        })
    })
}

/// How long a refused client is given to read its answer and close.
const LINGER: Duration = Duration::from_secs(1);

/// Gives a refused client [`LINGER`] to read its answer and hang up first,
/// reading (and dropping) what it still sends: a close right behind the
/// answer can reach a client before it has read the answer (kafka-python
/// then reports a lost connection, not the refusal), and a close with
/// unread bytes resets the connection and loses the answer on its way.
async fn linger<S: AsyncRead + AsyncWrite + Unpin>(io: &mut S) {
    let drain = async {
        let mut scratch = [0u8; 1024];
        for _ in 0..MAX_FRAMES {
            match io.read(&mut scratch).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// Reads one request frame (prefix included), of at most [`MAX_FRAME`].
async fn read_frame<S: AsyncRead + Unpin>(io: &mut S) -> Result<Bytes, ConnError> {
    let mut prefix = [0u8; 4];
    match io.read_exact(&mut prefix).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(exchange("the client closed before authenticating".into()));
        }
        Err(e) => return Err(e.into()),
    }
    let total = request_frame_size(&prefix, MAX_FRAME)?.ok_or(FrameError::BadHeader("request"))?;
    let mut frame = BytesMut::zeroed(total);
    frame[..4].copy_from_slice(&prefix);
    io.read_exact(&mut frame[4..]).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            ConnError::ClosedMidFrame
        } else {
            e.into()
        }
    })?;
    Ok(frame.freeze())
}

/// The body of a request frame of `api` at `version`.
pub(super) fn body<T: Decodable>(frame: &Bytes, api: ApiKey, version: i16) -> Result<T, ConnError> {
    let mut buf = frame.slice(4..);
    let bad = |_| ConnError::Frame(FrameError::BadHeader("SASL request"));
    KHeader::decode(&mut buf, api.request_header_version(version)).map_err(bad)?;
    T::decode(&mut buf, version).map_err(bad)
}

fn exchange(why: String) -> ConnError {
    ConnError::Unauthenticated(Unauthenticated::Exchange(why))
}

fn skipped(api: &'static str) -> ConnError {
    ConnError::Unauthenticated(Unauthenticated::Skipped(api))
}
