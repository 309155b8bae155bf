//! OAUTHBEARER (RFC 7628) for a proxy that terminates SASL: the client's
//! one message carries a JWT (RFC 7519), verified here against the key set
//! of `authentication.sasl.oauthBearer`: a signature by one of its keys,
//! under an allowed algorithm (never `none`), the issuer, the audience,
//! the expiry and not-before within the clock skew. The configured claim
//! (`sub` by default) is the principal. Pure: the clock is passed in.
//!
//! A refused token is answered like any failed authentication (one error,
//! one message); why it was refused is for the proxy's log.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;

use super::scram_server::AuthError;
use crate::config::identity::{
    Jwk, JwsAlgorithm, MAX_PRINCIPAL_CHARS, OAuthBearer, PublicKey, SaslTermination,
};

/// A token verified: whom it names, and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verified {
    /// The principal claim's value.
    pub(crate) principal: String,
    /// Its `exp`.
    pub(crate) expires: SystemTime,
}

/// One OAUTHBEARER message of a client of `sasl`: its token verified
/// against the key set in force, the principal and when it expires; on
/// failure, the principal it claims (unverified, for the log) and why.
pub(super) fn authenticate(
    sasl: &SaslTermination,
    message: &[u8],
) -> Result<(String, SystemTime), (String, AuthError)> {
    let unnamed = |why| (String::new(), why);
    let Some(settings) = sasl.oauth_bearer.as_ref() else {
        return Err(unnamed(AuthError::Unsupported("OAUTHBEARER")));
    };
    let (token, authzid) = bearer_token(message).map_err(unnamed)?;
    let keys = settings
        .jwks
        .0
        .as_ref()
        .as_ref()
        .map_or(&[][..], |j| &j.keys[..]);
    let claimed = || claim_unverified(message, &settings.principal_claim).unwrap_or_default();
    let verified =
        verify(token, settings, keys, SystemTime::now()).map_err(|why| (claimed(), why))?;
    if authzid.is_some_and(|a| a != verified.principal) {
        let why = AuthError::Unsupported("an authorization id other than the principal");
        return Err((verified.principal, why));
    }
    Ok((verified.principal, verified.expires))
}

/// How long a session holds: `sessionLifetime`, and no longer than the
/// token it was proved with (at least a second: 0 would mean for ever).
pub(super) fn session_lifetime(
    configured: Option<Duration>,
    expires: Option<SystemTime>,
) -> Option<Duration> {
    let left = expires.map(|e| {
        let left = e.duration_since(SystemTime::now()).unwrap_or_default();
        left.max(Duration::from_secs(1))
    });
    match (configured, left) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The bearer token of an OAUTHBEARER client message
/// (`n,[a=authzid],` 0x01 `auth=Bearer <token>` 0x01 0x01), and the
/// authorization id it names, if any.
pub(crate) fn bearer_token(message: &[u8]) -> Result<(&str, Option<&str>), AuthError> {
    let text = std::str::from_utf8(message).map_err(|_| AuthError::Malformed("UTF-8"))?;
    let (gs2, pairs) = text
        .split_once('\x01')
        .ok_or(AuthError::Malformed("OAUTHBEARER message"))?;
    let authzid = match gs2.split(',').collect::<Vec<_>>()[..] {
        ["n" | "y", "", ""] => None,
        ["n" | "y", a, ""] => Some(
            a.strip_prefix("a=")
                .ok_or(AuthError::Malformed("gs2 header"))?,
        ),
        [p, ..] if p.starts_with("p=") => return Err(AuthError::Unsupported("channel binding")),
        _ => return Err(AuthError::Malformed("gs2 header")),
    };
    let auth = (pairs.split('\x01'))
        .find_map(|kv| kv.strip_prefix("auth="))
        .ok_or(AuthError::Malformed("no auth"))?;
    let (scheme, token) = auth
        .split_once(' ')
        .ok_or(AuthError::Malformed("auth value"))?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(AuthError::Malformed("not a bearer token"));
    }
    Ok((token.trim(), authzid))
}

/// Verifies `token` under `settings` at `now`.
pub(crate) fn verify(
    token: &str,
    settings: &OAuthBearer,
    keys: &[Jwk],
    now: SystemTime,
) -> Result<Verified, AuthError> {
    let mut parts = token.split('.');
    let (Some(head), Some(body), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AuthError::Token("not a signed JWT (three parts)"));
    };
    let header = json(head)?;
    let alg = header.get("alg").and_then(Value::as_str).unwrap_or("none");
    if alg.eq_ignore_ascii_case("none") {
        return Err(AuthError::Token("unsigned"));
    }
    if header.get("crit").is_some() {
        return Err(AuthError::Unsupported("critical header parameters"));
    }
    let alg = JwsAlgorithm::by_name(alg)
        .filter(|a| settings.algorithms.contains(a))
        .ok_or(AuthError::Token("algorithm not allowed"))?;
    let kid = header.get("kid").and_then(Value::as_str);
    let signature = B64URL
        .decode(sig)
        .map_err(|_| AuthError::Token("signature not base64url"))?;
    let signed = &token.as_bytes()[..head.len() + 1 + body.len()];
    let verifies = |k: &&Jwk| {
        kid.is_none_or(|kid| k.kid.as_deref() == Some(kid))
            && alg.fits(&k.key)
            && k.alg.is_none_or(|a| a == alg)
            && checks(alg, &k.key, signed, &signature)
    };
    if !keys.iter().any(|k| verifies(&k)) {
        return Err(AuthError::Token("signature"));
    }
    claims(&json(body)?, settings, now)
}

/// The claims of a token whose signature holds.
fn claims(claims: &Value, settings: &OAuthBearer, now: SystemTime) -> Result<Verified, AuthError> {
    let time = |name| claims.get(name).and_then(Value::as_f64);
    let at = |secs: f64| SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs.max(0.0));
    let skew = settings.clock_skew;
    let expires = at(time("exp").ok_or(AuthError::Token("no exp"))?);
    if now > expires + skew {
        return Err(AuthError::Token("expired"));
    }
    if time("nbf").is_some_and(|nbf| now + skew < at(nbf)) {
        return Err(AuthError::Token("not yet valid"));
    }
    if claims.get("iss").and_then(Value::as_str) != Some(settings.issuer.as_str()) {
        return Err(AuthError::Token("issuer"));
    }
    let audience = settings.audience.as_str();
    let aud_ok = match claims.get("aud") {
        Some(Value::String(a)) => a == audience,
        Some(Value::Array(all)) => all.iter().any(|a| a.as_str() == Some(audience)),
        _ => false,
    };
    if !aud_ok {
        return Err(AuthError::Token("audience"));
    }
    let principal = claims
        .get(&settings.principal_claim)
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty() && p.chars().count() <= MAX_PRINCIPAL_CHARS)
        .ok_or(AuthError::Token("no principal claim"))?;
    Ok(Verified {
        principal: principal.to_owned(),
        expires,
    })
}

/// The `claim` of a token, its signature unchecked: what the proxy reads
/// of a token the broker verifies (SASL inspection).
pub(crate) fn claim_unverified(message: &[u8], claim: &str) -> Option<String> {
    let (token, _) = bearer_token(message).ok()?;
    let body = token.split('.').nth(1)?;
    let value = json(body).ok()?;
    let principal = value.get(claim)?.as_str()?;
    (!principal.is_empty() && principal.chars().count() <= MAX_PRINCIPAL_CHARS)
        .then(|| principal.to_owned())
}

fn json(part: &str) -> Result<Value, AuthError> {
    let bytes = B64URL
        .decode(part)
        .map_err(|_| AuthError::Token("not base64url"))?;
    match serde_json::from_slice(&bytes) {
        Ok(value @ Value::Object(_)) => Ok(value),
        _ => Err(AuthError::Token("not a JSON object")),
    }
}

/// Whether `signature` over `signed` holds under `key` and `alg`.
fn checks(alg: JwsAlgorithm, key: &PublicKey, signed: &[u8], signature: &[u8]) -> bool {
    use JwsAlgorithm as A;
    let verified = match (alg, key) {
        (A::Rs256 | A::Rs384 | A::Rs512, PublicKey::Rsa { n, e }) => {
            let params = match alg {
                A::Rs384 => &signature::RSA_PKCS1_2048_8192_SHA384,
                A::Rs512 => &signature::RSA_PKCS1_2048_8192_SHA512,
                _ => &signature::RSA_PKCS1_2048_8192_SHA256,
            };
            RsaPublicKeyComponents { n, e }.verify(params, signed, signature)
        }
        (A::Es256, PublicKey::P256 { point }) => {
            UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                .verify(signed, signature)
        }
        (A::Es384, PublicKey::P384 { point }) => {
            UnparsedPublicKey::new(&signature::ECDSA_P384_SHA384_FIXED, point)
                .verify(signed, signature)
        }
        (A::EdDsa, PublicKey::Ed25519 { x }) => {
            UnparsedPublicKey::new(&signature::ED25519, x).verify(signed, signature)
        }
        _ => return false,
    };
    verified.is_ok()
}

#[cfg(test)]
mod tests;
