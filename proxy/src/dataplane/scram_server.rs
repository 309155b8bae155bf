//! The server side of SCRAM (RFC 5802, SHA-256 and SHA-512) and of PLAIN
//! (RFC 4616), for a proxy that authenticates clients itself
//! (`authentication.sasl`), against salted keys ([`ScramUsers`]). Pure:
//! the nonce and the secret are passed in.
//!
//! An unknown user and a wrong password are answered alike: an unknown
//! user is given a salt derived from the user name and the process's
//! secret (the same salt at every attempt, as a real user's is), the
//! exchange goes on, and the proof fails in the same computation, with the
//! same error.

use std::num::NonZeroU32;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ring::rand::{SecureRandom, SystemRandom};
use ring::{digest, hmac, pbkdf2};

use super::scram::{Hash, attribute};
use crate::config::identity::{ScramKeys, ScramUsers};
use crate::config::sasl::SaslMechanism;

/// Iterations given to an unknown user when the file holds no user of the
/// mechanism.
const FAKE_ITERATIONS: u32 = 8192;

/// Why an authentication failed. Every variant is answered to the client
/// with the same words ([`FAILED`]); the variant is for the proxy's log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AuthError {
    /// The client's message is not what the mechanism says it must be.
    #[error("malformed {0}")]
    Malformed(&'static str),
    /// Wrong password, or no such user (told apart in no answer).
    #[error("invalid credentials")]
    Credentials,
    /// Something the proxy does not support (channel binding, extensions,
    /// an authorization id other than the user).
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// A bearer token refused (OAUTHBEARER): why.
    #[error("token refused: {0}")]
    Token(&'static str),
}

/// What a client is told of any failed authentication (Kafka's words).
pub(crate) fn failed(mechanism: SaslMechanism) -> String {
    format!(
        "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
    )
}

/// The hash of a SCRAM mechanism; `None` for PLAIN.
pub(crate) fn hash_of(mechanism: SaslMechanism) -> Option<Hash> {
    match mechanism {
        SaslMechanism::ScramSha256 => Some(Hash::Sha256),
        SaslMechanism::ScramSha512 => Some(Hash::Sha512),
        SaslMechanism::Plain | SaslMechanism::OAuthBearer => None,
    }
}

/// Salted keys of `password` (what `sluice-proxy scram-credential` writes).
pub(crate) fn derive(hash: Hash, password: &[u8], salt: &[u8], iterations: u32) -> ScramKeys {
    let rounds = NonZeroU32::new(iterations).unwrap_or(NonZeroU32::MIN);
    let mut salted = vec![0u8; hash.digest().output_len()];
    pbkdf2::derive(hash.pbkdf2(), rounds, salt, password, &mut salted);
    let salted = hmac::Key::new(hash.hmac(), &salted);
    let client_key = hmac::sign(&salted, b"Client Key");
    ScramKeys {
        iterations,
        salt: salt.to_vec(),
        stored_key: digest::digest(hash.digest(), client_key.as_ref())
            .as_ref()
            .to_vec(),
        server_key: hmac::sign(&salted, b"Server Key").as_ref().to_vec(),
    }
}

/// `user`'s keys for `mechanism`, or stand-ins for a user the file does not
/// hold: a salt derived from `secret` and the name, and keys no password
/// matches (random ones would do, but these cost nothing to make).
fn keys_or_fake(
    users: &ScramUsers,
    user: &str,
    mechanism: SaslMechanism,
    secret: &[u8],
) -> (ScramKeys, bool) {
    if let Some(keys) = users.get(user, mechanism) {
        return (keys.clone(), true);
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let tag = hmac::sign(&key, format!("{mechanism} {user}").as_bytes());
    let len = hash_of(mechanism).map_or(32, |h| h.digest().output_len());
    // As many rounds as the file's users have: the same work, the same time.
    let iterations = users.any_iterations(mechanism).unwrap_or(FAKE_ITERATIONS);
    let fake = ScramKeys {
        iterations,
        salt: tag.as_ref()[..16].to_vec(),
        stored_key: vec![0; len],
        server_key: tag.as_ref().iter().cycle().take(len).copied().collect(),
    };
    (fake, false)
}

/// A SCRAM exchange after the client's first message.
pub(crate) struct Pending {
    hash: Hash,
    user: String,
    known: bool,
    keys: ScramKeys,
    nonce: String,
    /// client-first-bare "," server-first.
    so_far: String,
}

/// Takes the client-first message; the server-first message to answer and
/// the exchange's state. `nonce` is the proxy's part of the nonce
/// (printable, no commas).
pub(crate) fn scram_first(
    mechanism: SaslMechanism,
    users: &ScramUsers,
    client_first: &[u8],
    nonce: &str,
    secret: &[u8],
) -> Result<(String, Pending), AuthError> {
    let hash = hash_of(mechanism).ok_or(AuthError::Unsupported("not SCRAM"))?;
    let text = std::str::from_utf8(client_first).map_err(|_| AuthError::Malformed("UTF-8"))?;
    // gs2-header: "n" (or "y": the client could bind, the server does not
    // offer it), then an optional authzid, which must be the user if given.
    let (gs2, rest) = match text.split_once(',') {
        Some((flag @ ("n" | "y"), rest)) => (flag, rest),
        Some((flag, _)) if flag.starts_with("p=") => {
            return Err(AuthError::Unsupported("channel binding"));
        }
        _ => return Err(AuthError::Malformed("gs2 header")),
    };
    let (authzid, bare) = rest
        .split_once(',')
        .ok_or(AuthError::Malformed("gs2 header"))?;
    let _ = gs2;
    if bare.starts_with("m=") {
        return Err(AuthError::Unsupported("extension"));
    }
    let user = attribute(bare, 'n').ok_or(AuthError::Malformed("user name"))?;
    let user = unescape(user).ok_or(AuthError::Malformed("user name"))?;
    if !authzid.is_empty() && authzid.strip_prefix("a=").map(unescape) != Some(Some(user.clone())) {
        return Err(AuthError::Unsupported(
            "an authorization id other than the user",
        ));
    }
    let client_nonce = attribute(bare, 'r').ok_or(AuthError::Malformed("nonce"))?;
    if client_nonce.is_empty() || !client_nonce.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(AuthError::Malformed("nonce"));
    }
    // Kafka's delegation tokens ride on an extension; none is supported.
    if bare.split(',').any(|a| a.starts_with("tokenauth=")) {
        return Err(AuthError::Unsupported("delegation tokens"));
    }
    let (keys, known) = keys_or_fake(users, &user, mechanism, secret);
    let nonce = format!("{client_nonce}{nonce}");
    let server_first = format!(
        "r={nonce},s={},i={}",
        B64.encode(&keys.salt),
        keys.iterations
    );
    let so_far = format!("{bare},{server_first}");
    let pending = Pending {
        hash,
        user,
        known,
        keys,
        nonce,
        so_far,
    };
    Ok((server_first, pending))
}

impl Pending {
    /// The user the client claims.
    pub(crate) fn user(&self) -> &str {
        &self.user
    }

    /// Takes the client-final message: the server-final message and the
    /// authenticated user, when the proof verifies.
    pub(crate) fn finish(self, client_final: &[u8]) -> Result<(String, String), AuthError> {
        let text = std::str::from_utf8(client_final).map_err(|_| AuthError::Malformed("UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or(AuthError::Malformed("proof"))?;
        let binding = attribute(without_proof, 'c').ok_or(AuthError::Malformed("binding"))?;
        // base64 of "n,," or "y,,", or with the authzid the first message named.
        let decoded = B64
            .decode(binding)
            .map_err(|_| AuthError::Malformed("binding"))?;
        if !(decoded.starts_with(b"n,") || decoded.starts_with(b"y,")) {
            return Err(AuthError::Unsupported("channel binding"));
        }
        if attribute(without_proof, 'r') != Some(self.nonce.as_str()) {
            return Err(AuthError::Malformed("nonce"));
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| AuthError::Malformed("proof"))?;
        let auth_message = format!("{},{without_proof}", self.so_far);
        let hmac_alg = self.hash.hmac();
        let stored = hmac::Key::new(hmac_alg, &self.keys.stored_key);
        let signature = hmac::sign(&stored, auth_message.as_bytes());
        let client_key: Vec<u8> = (proof.iter().zip(signature.as_ref()))
            .map(|(p, s)| p ^ s)
            .collect();
        let derived = digest::digest(self.hash.digest(), &client_key);
        let same = proof.len() == signature.as_ref().len()
            && same_bytes(derived.as_ref(), &self.keys.stored_key);
        if !(same && self.known) {
            return Err(AuthError::Credentials);
        }
        let server = hmac::Key::new(hmac_alg, &self.keys.server_key);
        let verifier = hmac::sign(&server, auth_message.as_bytes());
        Ok((format!("v={}", B64.encode(verifier)), self.user))
    }
}

/// Checks a PLAIN message (`authzid NUL user NUL password`) against the
/// user's SCRAM keys (SHA-512's if the file has them, else SHA-256's): the
/// user, when the password matches.
pub(crate) fn plain(
    users: &ScramUsers,
    message: &[u8],
    secret: &[u8],
) -> Result<String, AuthError> {
    let mut parts = message.split(|b| *b == 0);
    let (Some(authzid), Some(user), Some(password), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AuthError::Malformed("PLAIN message"));
    };
    let user = std::str::from_utf8(user).map_err(|_| AuthError::Malformed("user name"))?;
    if user.is_empty() || !authzid.is_empty() && authzid != user.as_bytes() {
        return Err(AuthError::Unsupported(
            "an authorization id other than the user",
        ));
    }
    let mechanism = if users.get(user, SaslMechanism::ScramSha512).is_some() {
        SaslMechanism::ScramSha512
    } else if users.get(user, SaslMechanism::ScramSha256).is_some() {
        SaslMechanism::ScramSha256
    } else {
        SaslMechanism::ScramSha512
    };
    let (keys, known) = keys_or_fake(users, user, mechanism, secret);
    let hash = hash_of(mechanism).unwrap_or(Hash::Sha512);
    let derived = derive(hash, password, &keys.salt, keys.iterations);
    let same = same_bytes(&derived.stored_key, &keys.stored_key);
    if same && known {
        Ok(user.to_owned())
    } else {
        Err(AuthError::Credentials)
    }
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths
/// only.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let diff = (a.iter().zip(b)).fold(0u8, |acc, (x, y)| acc | std::hint::black_box(x ^ y));
    a.len() == b.len() && diff == 0
}

/// A SCRAM user name with `=2C` and `=3D` decoded; `None` for any other
/// `=` sequence (RFC 5802 says the server must then fail).
fn unescape(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 3)?;
        out.push(match code {
            "2C" => ',',
            "3D" => '=',
            _ => return None,
        });
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// This process's secret, from which unknown users' salts are derived:
/// random, made once.
pub(super) fn secret() -> &'static [u8] {
    static SECRET: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    SECRET.get_or_init(|| {
        let mut bytes = [0u8; 32];
        let _ = SystemRandom::new().fill(&mut bytes);
        bytes
    })
}

/// The proxy's part of a SCRAM nonce: 18 random bytes, base64.
pub(super) fn nonce() -> String {
    let mut bytes = [0u8; 18];
    let _ = SystemRandom::new().fill(&mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests;
