//! SASL inspection (`authentication.saslInspection`): the broker
//! authenticates the client, and the proxy reads who it authenticated.
//! The client's SaslHandshake names the mechanism; its first
//! SaslAuthenticate names the user (PLAIN's authentication id, SCRAM's
//! `n=` in the client-first message, an OAUTHBEARER token's principal
//! claim, `sub` unless `principalClaim` says another). The user becomes
//! the connection's principal only when the broker's answer to the
//! exchange's last SaslAuthenticate (PLAIN's and OAUTHBEARER's first,
//! SCRAM's second) says it succeeded (for OAUTHBEARER, with no error
//! challenge in it: RFC 7628's failure); a failure, or any other
//! mechanism, yields none. A later exchange on the
//! same connection (KIP-368 re-authentication) cannot change it: a broker
//! refuses a re-authentication as another user.
//!
//! Only these small frames are held and read; every other request and
//! response passes as before.

use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ResponseHeader, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
};
use kafka_protocol::protocol::Decodable;
use sluice_kafka::frame::RequestHeader;

use super::terminate::body;
use crate::config::sasl::SaslMechanism;

/// SaslHandshake's and SaslAuthenticate's keys.
pub(super) const HANDSHAKE: i16 = 17;
pub(super) const AUTHENTICATE: i16 = 36;

/// One connection's exchange as far as the proxy has seen it, and whether
/// the cluster requires a principal (`authentication.required`): then any
/// request but ApiVersions and the exchange's own, before the broker
/// accepted one, closes the connection unforwarded.
#[derive(Debug, Default)]
pub(super) struct Inspection {
    state: Mutex<State>,
    required: bool,
    /// The claim of an OAUTHBEARER token that names the user.
    claim: String,
}

#[derive(Debug, Default)]
struct State {
    mechanism: Option<SaslMechanism>,
    /// The user the exchange names, from its first message.
    claimed: Option<String>,
    /// SaslAuthenticate requests of this exchange sent, and answered.
    sent: u8,
    answered: u8,
}

impl Inspection {
    /// An inspection of a cluster that requires a principal or not,
    /// reading OAUTHBEARER tokens' `claim`.
    pub(super) fn new(required: bool, claim: &str) -> Self {
        Inspection {
            state: Mutex::default(),
            required,
            claim: claim.to_owned(),
        }
    }

    /// Refuses `header` when a principal is required and `principal` is
    /// not known yet.
    pub(super) fn admits(
        &self,
        header: &RequestHeader,
        principal: Option<&Arc<str>>,
    ) -> Result<(), super::direction::ConnError> {
        const API_VERSIONS: i16 = 18;
        let exchange = Self::reads(header) || header.api_key == API_VERSIONS;
        if self.required && principal.is_none() && !exchange {
            let api = sluice_kafka::api_name(header.api_key);
            return Err(super::direction::ConnError::NotYetAuthenticated(api));
        }
        Ok(())
    }

    /// Whether the request `header` is one the inspection reads.
    pub(super) fn reads(header: &RequestHeader) -> bool {
        header.api_key == HANDSHAKE || header.api_key == AUTHENTICATE
    }

    /// Reads a SaslHandshake or SaslAuthenticate request (prefix included).
    pub(super) fn request(&self, frame: &Bytes, header: &RequestHeader) {
        let mut state = self.lock();
        let version = header.api_version;
        if header.api_key == HANDSHAKE {
            let named = body::<SaslHandshakeRequest>(frame, ApiKey::SaslHandshake, version).ok();
            let mechanism = named.and_then(|r| {
                (SaslMechanism::ALL.into_iter()).find(|m| m.as_str() == r.mechanism.as_str())
            });
            *state = State {
                mechanism,
                ..State::default()
            };
            return;
        }
        let Ok(request) = body::<SaslAuthenticateRequest>(frame, ApiKey::SaslAuthenticate, version)
        else {
            state.mechanism = None;
            return;
        };
        if state.sent == 0 {
            state.claimed = state
                .mechanism
                .and_then(|m| user_of(m, &request.auth_bytes, &self.claim));
        }
        state.sent = state.sent.saturating_add(1);
    }

    /// Reads the broker's answer to a SaslAuthenticate (prefix included):
    /// the principal is set when it ends the exchange in success.
    pub(super) fn answered(
        &self,
        frame: &Bytes,
        header: &RequestHeader,
        principal: &OnceLock<Arc<str>>,
    ) {
        let mut state = self.lock();
        state.answered = state.answered.saturating_add(1);
        let ok = match answer(frame, header.api_version) {
            // RFC 7628: a failed token is answered with an error challenge
            // (and the error only after the client's reply).
            Some((0, challenge)) => {
                !(state.mechanism == Some(SaslMechanism::OAuthBearer) && challenge)
            }
            _ => false,
        };
        if !ok {
            state.claimed = None;
            return;
        }
        let last = match state.mechanism {
            Some(SaslMechanism::Plain | SaslMechanism::OAuthBearer) => 1,
            Some(SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512) => 2,
            None => return,
        };
        if state.answered == last
            && let Some(user) = state.claimed.take()
        {
            let _ = principal.set(Arc::from(user));
            tracing::debug!(principal = ?principal.get(), "client authenticated by the broker");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The user a first SASL message names: PLAIN's authentication id, SCRAM's
/// `n=` (unescaped), an OAUTHBEARER token's `claim`.
fn user_of(mechanism: SaslMechanism, message: &[u8], claim: &str) -> Option<String> {
    let user = match mechanism {
        SaslMechanism::Plain => {
            let mut parts = message.split(|b| *b == 0);
            let _authzid = parts.next()?;
            String::from_utf8(parts.next()?.to_vec()).ok()?
        }
        SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
            let text = std::str::from_utf8(message).ok()?;
            let bare = text.splitn(3, ',').nth(2)?;
            let name = bare.split(',').find_map(|a| a.strip_prefix("n="))?;
            name.replace("=2C", ",").replace("=3D", "=")
        }
        SaslMechanism::OAuthBearer => super::oauth::claim_unverified(message, claim)?,
    };
    let max = crate::config::identity::MAX_PRINCIPAL_CHARS;
    (!user.is_empty() && user.chars().count() <= max).then_some(user)
}

/// A SaslAuthenticate response's error code, and whether it carries bytes
/// (a challenge).
fn answer(frame: &Bytes, version: i16) -> Option<(i16, bool)> {
    let mut buf = frame.slice(4..);
    let api = ApiKey::SaslAuthenticate;
    ResponseHeader::decode(&mut buf, api.response_header_version(version)).ok()?;
    let response = SaslAuthenticateResponse::decode(&mut buf, version).ok()?;
    Some((response.error_code, !response.auth_bytes.is_empty()))
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::SaslAuthenticateResponse;

    use super::*;

    fn header(api_key: i16) -> RequestHeader {
        RequestHeader {
            api_key,
            api_version: 1,
            correlation_id: 1,
        }
    }

    fn handshake(mechanism: &str) -> Bytes {
        let mut r = SaslHandshakeRequest::default();
        r.mechanism = kafka_protocol::protocol::StrBytes::from_string(mechanism.into());
        sluice_kafka::encode::request(ApiKey::SaslHandshake, 1, 1, "c", &r).unwrap()
    }

    fn authenticate(bytes: &[u8]) -> Bytes {
        let mut r = SaslAuthenticateRequest::default();
        r.auth_bytes = Bytes::copy_from_slice(bytes);
        sluice_kafka::encode::request(ApiKey::SaslAuthenticate, 1, 1, "c", &r).unwrap()
    }

    fn answer(code: i16) -> Bytes {
        let mut r = SaslAuthenticateResponse::default();
        r.error_code = code;
        sluice_kafka::encode::response(ApiKey::SaslAuthenticate, 1, 1, &r).unwrap()
    }

    #[test]
    fn the_principal_is_the_user_once_the_broker_says_the_exchange_succeeded() {
        let (hs, au) = (header(HANDSHAKE), header(AUTHENTICATE));
        let scram = Inspection::default();
        let principal = OnceLock::new();
        scram.request(&handshake("SCRAM-SHA-512"), &hs);
        scram.request(&authenticate(b"n,,n=al=2Cice,r=abc"), &au);
        scram.answered(&answer(0), &au, &principal);
        assert!(principal.get().is_none(), "the first step is not the last");
        scram.request(&authenticate(b"c=biws,r=abcdef,p=xyz"), &au);
        scram.answered(&answer(0), &au, &principal);
        assert_eq!(principal.get().map(|p| &**p), Some("al,ice"));

        // A failure yields none; so does PLAIN's refusal.
        let failed = Inspection::default();
        let none = OnceLock::new();
        failed.request(&handshake("SCRAM-SHA-512"), &hs);
        failed.request(&authenticate(b"n,,n=alice,r=abc"), &au);
        failed.answered(&answer(0), &au, &none);
        failed.request(&authenticate(b"c=biws,r=abcdef,p=bad"), &au);
        failed.answered(&answer(58), &au, &none);
        assert!(none.get().is_none());

        let plain = Inspection::default();
        let bob = OnceLock::new();
        plain.request(&handshake("PLAIN"), &hs);
        plain.request(&authenticate(b"\0bob\0pw"), &au);
        plain.answered(&answer(0), &au, &bob);
        assert_eq!(bob.get().map(|p| &**p), Some("bob"));

        // Unknown mechanisms (GSSAPI) yield none.
        let other = Inspection::default();
        let nobody = OnceLock::new();
        other.request(&handshake("GSSAPI"), &hs);
        other.request(&authenticate(b"token"), &au);
        other.answered(&answer(0), &au, &nobody);
        assert!(nobody.get().is_none());
    }

    /// OAUTHBEARER: the token's claim, once the broker answers without an
    /// error challenge; RFC 7628's challenge (error 0, a JSON status) is a
    /// failure.
    #[test]
    fn a_bearer_tokens_claim_is_the_principal_unless_the_broker_challenges_it() {
        let (hs, au) = (header(HANDSHAKE), header(AUTHENTICATE));
        let issuer = sluice_testkit::jwt::Issuer::new("k");
        let claims = sluice_testkit::jwt::Issuer::claims("carol", 60);
        let message = format!("n,,\x01auth=Bearer {}\x01\x01", issuer.token(&claims));
        let challenge = {
            let mut r = SaslAuthenticateResponse::default();
            r.auth_bytes = Bytes::from_static(br#"{"status":"invalid_token"}"#);
            sluice_kafka::encode::response(ApiKey::SaslAuthenticate, 1, 1, &r).unwrap()
        };
        for (answered, expected) in [(answer(0), Some("carol")), (challenge, None)] {
            let bearer = Inspection::new(false, "sub");
            let principal = OnceLock::new();
            bearer.request(&handshake("OAUTHBEARER"), &hs);
            bearer.request(&authenticate(message.as_bytes()), &au);
            bearer.answered(&answered, &au, &principal);
            assert_eq!(principal.get().map(|p| &**p), expected);
        }
        let by_email = Inspection::new(false, "email");
        let nobody = OnceLock::new();
        by_email.request(&handshake("OAUTHBEARER"), &hs);
        by_email.request(&authenticate(message.as_bytes()), &au);
        by_email.answered(&answer(0), &au, &nobody);
        assert!(nobody.get().is_none(), "no such claim");
    }
}
