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
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestHeader as KHeader, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use ring::rand::{SecureRandom, SystemRandom};
use sluice_kafka::encode;
use sluice_kafka::frame::{FrameError, request_frame_size, request_header};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::cluster::ClusterRuntime;
use super::direction::ConnError;
use super::sasl;
use super::scram_server::{AuthError, Pending, failed, plain, scram_first};
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

/// Authenticates the client on `io` under `sasl`: the principal it proved.
pub(super) async fn authenticate<S>(
    io: &mut S,
    sasl: &SaslTermination,
    cluster: &ClusterRuntime,
    peer: IpAddr,
) -> Result<Arc<str>, ConnError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let exchange = Exchange {
        sasl,
        cluster,
        peer,
        users: sasl.users.0.as_ref().as_ref(),
        mechanism: None,
        pending: None,
    };
    match tokio::time::timeout(AUTH_TIMEOUT, exchange.run(io)).await {
        Ok(result) => result,
        Err(_) => Err(ConnError::Unauthenticated(Unauthenticated::Exchange(
            format!("not authenticated within {AUTH_TIMEOUT:?}"),
        ))),
    }
}

struct Exchange<'a> {
    sasl: &'a SaslTermination,
    cluster: &'a ClusterRuntime,
    peer: IpAddr,
    /// `None` when the credentials file was not read: every attempt fails.
    users: Option<&'a ScramUsers>,
    mechanism: Option<SaslMechanism>,
    pending: Option<Pending>,
}

/// Where the exchange stands after a SaslAuthenticate was answered.
enum Outcome {
    /// Waiting for the client's next message.
    More,
    /// Authenticated as this user.
    Proved(String),
    /// Refused (the answer says so).
    Refused(Unauthenticated),
}

/// What one SaslAuthenticate came to.
enum Step {
    /// Answer and wait for the next message.
    More(Vec<u8>),
    /// Authenticated as this user; the last message to answer.
    Done(String, Vec<u8>),
}

impl Exchange<'_> {
    async fn run<S>(mut self, io: &mut S) -> Result<Arc<str>, ConnError>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        for _ in 0..MAX_FRAMES {
            let frame = read_frame(io).await?;
            let header = request_header(&frame)?;
            let corr = header.correlation_id;
            let version = header.api_version;
            let answer = match ApiKey::try_from(header.api_key) {
                Ok(ApiKey::ApiVersions) => versions::answer(self.cluster, version, corr).await?,
                Ok(ApiKey::SaslHandshake) => self.handshake(&frame, version, corr)?,
                Ok(ApiKey::SaslAuthenticate) => {
                    let (answer, outcome) = self.authenticate(&frame, version, corr).await?;
                    io.write_all(&answer).await?;
                    io.flush().await?;
                    match outcome {
                        Outcome::More => continue,
                        Outcome::Proved(user) => return Ok(Arc::from(user)),
                        Outcome::Refused(why) => return Err(ConnError::Unauthenticated(why)),
                    }
                }
                _ => {
                    let api = sluice_kafka::api_name(header.api_key);
                    return Err(skipped(api));
                }
            };
            io.write_all(&answer).await?;
            io.flush().await?;
        }
        Err(exchange(format!(
            "more than {MAX_FRAMES} frames without authenticating"
        )))
    }

    /// Answers SaslHandshake: the mechanism chosen, or the ones offered.
    fn handshake(&mut self, frame: &Bytes, version: i16, corr: i32) -> Result<Bytes, ConnError> {
        if version < 1 {
            // v0 frames the SASL tokens without Kafka headers; ApiVersions
            // offers v1 on, so only a client that ignores it sends v0.
            return Err(exchange(
                "SaslHandshake v0 (unframed SASL) is not served".into(),
            ));
        }
        let request: SaslHandshakeRequest = body(frame, ApiKey::SaslHandshake, version)?;
        let offered = &self.sasl.mechanisms;
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
    ) -> Result<(Bytes, Outcome), ConnError> {
        let Some(mechanism) = self.mechanism else {
            return Err(exchange("SaslAuthenticate before SaslHandshake".into()));
        };
        let request: SaslAuthenticateRequest = body(frame, ApiKey::SaslAuthenticate, version)?;
        let mut response = SaslAuthenticateResponse::default();
        match self.step(mechanism, &request.auth_bytes) {
            Ok(Step::More(bytes)) => {
                response.auth_bytes = Bytes::from(bytes);
                let frame = encode::response(ApiKey::SaslAuthenticate, version, corr, &response)?;
                Ok((frame, Outcome::More))
            }
            Ok(Step::Done(user, bytes)) => {
                response.auth_bytes = Bytes::from(bytes);
                let frame = encode::response(ApiKey::SaslAuthenticate, version, corr, &response)?;
                self.cluster.auth_failures.succeeded(self.peer);
                Ok((frame, Outcome::Proved(user)))
            }
            Err((user, why)) => {
                // Slowed, then answered alike whatever failed.
                tokio::time::sleep(self.cluster.auth_failures.failed(self.peer)).await;
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
    ) -> Result<Step, (String, AuthError)> {
        let empty = ScramUsers::default();
        let users = self.users.unwrap_or(&empty);
        let secret = secret();
        let unnamed = |why| (String::new(), why);
        if mechanism == SaslMechanism::Plain {
            let user = plain(users, message, secret).map_err(unnamed)?;
            return Ok(Step::Done(user, Vec::new()));
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
                Ok(Step::Done(proved, last.into_bytes()))
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

/// This process's secret, from which unknown users' salts are derived:
/// random, made once.
fn secret() -> &'static [u8] {
    static SECRET: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    SECRET.get_or_init(|| {
        let mut bytes = [0u8; 32];
        let _ = SystemRandom::new().fill(&mut bytes);
        bytes
    })
}

/// The proxy's part of a SCRAM nonce: 18 random bytes, base64.
fn nonce() -> String {
    use base64::Engine as _;
    let mut bytes = [0u8; 18];
    let _ = SystemRandom::new().fill(&mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn exchange(why: String) -> ConnError {
    ConnError::Unauthenticated(Unauthenticated::Exchange(why))
}

fn skipped(api: &'static str) -> ConnError {
    ConnError::Unauthenticated(Unauthenticated::Skipped(api))
}
