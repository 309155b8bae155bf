//! The proxy's own SASL authentication, on the connections it makes by
//! itself (the broker lookup, a reload's upstream check) to a cluster that
//! requires it: SaslHandshake v1, then SaslAuthenticate v1 with PLAIN or
//! SCRAM (`upstream.sasl`). Clients' connections never go through here:
//! their own SASL exchanges pass through the proxy as bytes.
//!
//! The two responses are small and read by hand, bounded by the bytes they
//! came in, so no declared length reaches an allocation. No error carries
//! the credentials, and a broker's words are escaped and cut ([`scrub`]).
//!
//! - [`scrub`]: what of a broker's text may be echoed

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{ApiKey, SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;
use ring::rand::{SecureRandom, SystemRandom};

mod scrub;

use self::scrub::{code_name, sanitized};

use super::client::{receive, send};
use super::scram::{self, ScramError};
use crate::config::sasl::{Credentials, SaslMechanism, UpstreamSasl};
use tokio::io::{AsyncRead, AsyncWrite};

const HANDSHAKE_VERSION: i16 = 1;
const AUTHENTICATE_VERSION: i16 = 1;
/// Kafka's UNSUPPORTED_SASL_MECHANISM.
const UNSUPPORTED_MECHANISM: i16 = 33;

/// Why the proxy's own authentication failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SaslError {
    /// The credential files were not read (a validator that reads no files
    /// built this configuration).
    #[error("the credentials in upstream.sasl were not read")]
    NoCredentials,
    /// The conversation broke (I/O or an unreadable answer).
    #[error("{step}: {why}")]
    Exchange {
        /// SaslHandshake or SaslAuthenticate.
        step: &'static str,
        /// What went wrong.
        why: String,
    },
    /// The broker does not enable the configured mechanism.
    #[error("the broker does not enable {mechanism} (it offers {offered})")]
    Unsupported {
        /// The configured mechanism.
        mechanism: SaslMechanism,
        /// What it offers, comma-separated.
        offered: String,
    },
    /// SaslHandshake answered another error code.
    #[error("SaslHandshake answered {} (error code {})", code_name(*.0), .0)]
    Handshake(i16),
    /// The broker refused the credentials: the error's name and code; its
    /// message is logged (scrubbed, escaped), never echoed.
    #[error("the broker refused the credentials ({}, error code {code})", code_name(*code))]
    Refused {
        /// Kafka's error code (58: SASL_AUTHENTICATION_FAILED).
        code: i16,
        /// The broker's message, until [`scrub::sanitized`] logs it.
        message: String,
    },
    /// The SCRAM exchange failed.
    #[error("{0}")]
    Scram(ScramError),
}

/// Authenticates `io` as `upstream.sasl` says, right after ApiVersions.
pub(crate) async fn authenticate(
    io: &mut (impl AsyncRead + AsyncWrite + Unpin),
    sasl: &UpstreamSasl,
) -> Result<(), SaslError> {
    let credentials = sasl
        .credentials
        .0
        .as_ref()
        .as_ref()
        .ok_or(SaslError::NoCredentials)?;
    handshake(io, sasl.mechanism)
        .await
        .map_err(|e| sanitized(e, credentials))?;
    let result = match sasl.mechanism {
        SaslMechanism::Plain => {
            let token = format!("\0{}\0{}", credentials.username, credentials.password);
            exchange(io, 11, token.into_bytes()).await.map(|_| ())
        }
        SaslMechanism::ScramSha256 => scram_exchange(io, scram::Hash::Sha256, credentials).await,
        SaslMechanism::ScramSha512 => scram_exchange(io, scram::Hash::Sha512, credentials).await,
        // `upstream.sasl` never names it (the configuration refuses it).
        SaslMechanism::OAuthBearer => Err(SaslError::Exchange {
            step: "SaslAuthenticate",
            why: "OAUTHBEARER is not a mechanism the proxy uses upstream".to_owned(),
        }),
    };
    result.map_err(|e| sanitized(e, credentials))
}

async fn scram_exchange(
    io: &mut (impl AsyncRead + AsyncWrite + Unpin),
    hash: scram::Hash,
    credentials: &Credentials,
) -> Result<(), SaslError> {
    let nonce = nonce()?;
    let (first, client) =
        scram::Client::start(hash, &credentials.username, &credentials.password, &nonce);
    let server_first = exchange(io, 11, first.into_bytes()).await?;
    let last = client.respond(&server_first).map_err(SaslError::Scram)?;
    let server_final = exchange(io, 12, last.message.clone().into_bytes()).await?;
    last.verify(&server_final).map_err(SaslError::Scram)
}

/// 24 random bytes, base64: the client's part of the SCRAM nonce.
fn nonce() -> Result<String, SaslError> {
    use base64::Engine as _;
    let mut bytes = [0u8; 24];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| SaslError::Exchange {
            step: "SaslAuthenticate",
            why: "no randomness for the nonce".into(),
        })?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

async fn handshake(
    io: &mut (impl AsyncRead + AsyncWrite + Unpin),
    mechanism: SaslMechanism,
) -> Result<(), SaslError> {
    let fail = |why: String| SaslError::Exchange {
        step: "SaslHandshake",
        why,
    };
    let mut request = SaslHandshakeRequest::default();
    request.mechanism = StrBytes::from_static_str(mechanism.as_str());
    send(io, ApiKey::SaslHandshake, HANDSHAKE_VERSION, 10, &request)
        .await
        .map_err(fail)?;
    let mut body = receive(io, ApiKey::SaslHandshake, HANDSHAKE_VERSION, 10)
        .await
        .map_err(fail)?;
    let code = int16(&mut body).map_err(fail)?;
    if code == 0 {
        return Ok(());
    }
    if code != UNSUPPORTED_MECHANISM {
        return Err(SaslError::Handshake(code));
    }
    let offered = mechanisms(&mut body).map_err(fail)?;
    Err(SaslError::Unsupported {
        mechanism,
        offered: if offered.is_empty() {
            "none".to_owned()
        } else {
            offered.join(", ")
        },
    })
}

/// One SaslAuthenticate round: sends `auth_bytes`, returns the broker's.
async fn exchange(
    io: &mut (impl AsyncRead + AsyncWrite + Unpin),
    correlation_id: i32,
    auth_bytes: Vec<u8>,
) -> Result<Bytes, SaslError> {
    let fail = |why: String| SaslError::Exchange {
        step: "SaslAuthenticate",
        why,
    };
    let mut request = SaslAuthenticateRequest::default();
    request.auth_bytes = Bytes::from(auth_bytes);
    let api = ApiKey::SaslAuthenticate;
    send(io, api, AUTHENTICATE_VERSION, correlation_id, &request)
        .await
        .map_err(fail)?;
    let mut body = receive(io, api, AUTHENTICATE_VERSION, correlation_id)
        .await
        .map_err(fail)?;
    let code = int16(&mut body).map_err(fail)?;
    let message = string(&mut body).map_err(fail)?;
    if code != 0 {
        return Err(SaslError::Refused {
            code,
            message: message.unwrap_or_else(|| "no message".to_owned()),
        });
    }
    let len = usize::try_from(int32(&mut body).map_err(fail)?)
        .map_err(|_| fail("null auth bytes".into()))?;
    take(&mut body, len).map_err(fail)
}

fn int16(body: &mut Bytes) -> Result<i16, String> {
    if body.remaining() < 2 {
        return Err("truncated response".into());
    }
    Ok(body.get_i16())
}

fn int32(body: &mut Bytes) -> Result<i32, String> {
    if body.remaining() < 4 {
        return Err("truncated response".into());
    }
    Ok(body.get_i32())
}

fn take(body: &mut Bytes, len: usize) -> Result<Bytes, String> {
    if body.remaining() < len {
        return Err("truncated response".into());
    }
    Ok(body.split_to(len))
}

/// A nullable STRING (INT16 length, -1 for null).
fn string(body: &mut Bytes) -> Result<Option<String>, String> {
    let len = int16(body)?;
    let Ok(len) = usize::try_from(len) else {
        return Ok(None);
    };
    let bytes = take(body, len)?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The mechanisms array of a SaslHandshake v1 response.
fn mechanisms(body: &mut Bytes) -> Result<Vec<String>, String> {
    let count = int32(body)?;
    // Each takes at least its two length bytes: a count past that is a lie.
    let count = usize::try_from(count)
        .ok()
        .filter(|n| *n <= body.remaining() / 2)
        .ok_or("bad mechanism count")?;
    (0..count)
        .map(|_| string(body).map(Option::unwrap_or_default))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::BufMut;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use crate::dataplane::stream::BoxIo;

    use super::*;
    use crate::config::files::FileRef;
    use crate::config::tls::Loaded;

    fn plain(password: &str) -> UpstreamSasl {
        UpstreamSasl {
            mechanism: SaslMechanism::Plain,
            username_file: FileRef {
                path: "user".into(),
                digest: String::new(),
            },
            password_file: FileRef {
                path: "pass".into(),
                digest: String::new(),
            },
            credentials: Loaded(Arc::new(Some(Credentials {
                username: "proxy".into(),
                password: password.into(),
            }))),
        }
    }

    /// Reads one request frame: its correlation id and what follows the
    /// header (client id included).
    async fn request(peer: &mut DuplexStream) -> (i32, Vec<u8>) {
        let len = peer.read_i32().await.unwrap() as usize;
        let mut frame = vec![0u8; len];
        peer.read_exact(&mut frame).await.unwrap();
        let correlation = i32::from_be_bytes(frame[4..8].try_into().unwrap());
        (correlation, frame[8..].to_vec())
    }

    async fn answer(peer: &mut DuplexStream, correlation: i32, body: &[u8]) {
        let mut frame = Vec::new();
        frame.put_i32(4 + body.len() as i32);
        frame.put_i32(correlation);
        frame.put_slice(body);
        peer.write_all(&frame).await.unwrap();
    }

    /// A broker that accepts PLAIN and answers SaslAuthenticate with
    /// `code` and `message`; returns the auth bytes it was sent.
    async fn broker(mut peer: DuplexStream, code: i16, message: &str) -> Vec<u8> {
        let (c, body) = request(&mut peer).await;
        assert!(body.ends_with(b"\0\x05PLAIN"), "{body:?}");
        answer(
            &mut peer,
            c,
            &[0, 0, 0, 0, 0, 1, 0, 5, b'P', b'L', b'A', b'I', b'N'],
        )
        .await;
        let (c, body) = request(&mut peer).await;
        let mut reply = Vec::new();
        reply.put_i16(code);
        reply.put_i16(message.len() as i16);
        reply.put_slice(message.as_bytes());
        reply.put_i32(0);
        reply.put_i64(0);
        answer(&mut peer, c, &reply).await;
        body[body.len() - 18..].to_vec()
    }

    #[tokio::test]
    async fn plain_sends_the_rfc_4616_token_and_a_refusal_is_scrubbed() {
        let (ours, theirs) = tokio::io::duplex(4096);
        let peer = tokio::spawn(broker(theirs, 0, "NONE"));
        let mut io: BoxIo = Box::new(ours);
        authenticate(&mut io, &plain("pw-4616")).await.unwrap();
        // Its length (i32), then "\0proxy\0pw-4616".
        assert_eq!(peer.await.unwrap(), b"\0\0\0\x0e\0proxy\0pw-4616");

        let (ours, theirs) = tokio::io::duplex(4096);
        let peer = tokio::spawn(broker(theirs, 58, "bad password pw-4616"));
        let mut io: BoxIo = Box::new(ours);
        let e = authenticate(&mut io, &plain("pw-4616")).await.unwrap_err();
        peer.await.unwrap();
        assert_eq!(
            e.to_string(),
            "the broker refused the credentials (SaslAuthenticationFailed, error code 58)"
        );
    }

    #[test]
    fn responses_are_read_within_their_bytes() {
        let mut body = Bytes::from_static(&[0, 2, b'O', b'K', 0, 0, 0, 1]);
        assert_eq!(string(&mut body).unwrap().as_deref(), Some("OK"));
        assert!(take(&mut body, 5).is_err());
        // 1.4 billion mechanisms declared in six bytes.
        let mut lie = Bytes::from_static(&[0x55, 0x55, 0x55, 0x55, 0, 0]);
        assert_eq!(mechanisms(&mut lie).unwrap_err(), "bad mechanism count");
        let mut two = Bytes::from_static(&[0, 0, 0, 2, 0, 1, b'A', 0, 1, b'B']);
        assert_eq!(mechanisms(&mut two).unwrap(), ["A", "B"]);
        let mut null = Bytes::from_static(&[0xff, 0xff]);
        assert_eq!(string(&mut null).unwrap(), None);
    }
}
