//! The client side of SCRAM (RFC 5802) with SHA-256 (RFC 7677) or SHA-512,
//! as Kafka speaks it: no channel binding, no SASLprep (Kafka's own clients
//! send the password's UTF-8 bytes as they are). Pure: the nonce is passed
//! in, and the exchange is two steps over the messages the broker sends.
//!
//! The crypto is ring's (already the workspace's TLS provider); the `scram`
//! crate speaks SHA-256 only, and Kafka clusters mostly use SHA-512.

use std::num::NonZeroU32;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ring::{digest, hmac, pbkdf2};

/// Which hash the mechanism uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hash {
    /// SCRAM-SHA-256.
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl Hash {
    pub(super) fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            Hash::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            Hash::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }

    pub(super) fn hmac(self) -> hmac::Algorithm {
        match self {
            Hash::Sha256 => hmac::HMAC_SHA256,
            Hash::Sha512 => hmac::HMAC_SHA512,
        }
    }

    pub(super) fn digest(self) -> &'static digest::Algorithm {
        match self {
            Hash::Sha256 => &digest::SHA256,
            Hash::Sha512 => &digest::SHA512,
        }
    }
}

/// Fewest PBKDF2 iterations accepted from a broker, as Kafka's own client:
/// a hostile broker asking for fewer would get a proof far cheaper to
/// crack offline (`i=1`: about 4,000 times).
const MIN_ITERATIONS: u32 = 4096;

/// Most PBKDF2 iterations accepted from a broker (Kafka allows 4096-16384;
/// the derivation runs on the lookup's task, a few milliseconds at that):
/// a hostile broker must not make the proxy spin.
const MAX_ITERATIONS: u32 = 65_536;

/// Why the exchange failed. Never holds the password or anything derived
/// from it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ScramError {
    /// The broker's message is not what RFC 5802 says it must be.
    #[error("the broker's SCRAM message is malformed ({0})")]
    Malformed(&'static str),
    /// The broker refused, with its own words (`e=`).
    #[error("the broker refused: {0}")]
    Refused(String),
    /// The broker asks for fewer PBKDF2 iterations than [`MIN_ITERATIONS`].
    #[error("the broker asks for {0} PBKDF2 iterations, fewer than {MIN_ITERATIONS}")]
    TooFewIterations(u32),
    /// The broker requires an extension (`m=`), which RFC 5802 says the
    /// client must then refuse: the proxy knows none.
    #[error("the broker requires a SCRAM extension (m=) the proxy does not support")]
    Extension,
    /// The broker's nonce does not extend the proxy's.
    #[error("the broker's nonce does not extend the proxy's")]
    Nonce,
    /// The broker could not prove it knows the password's keys.
    #[error("the broker's signature does not verify")]
    ServerSignature,
}

/// A SCRAM exchange after the client's first message.
pub(crate) struct Client {
    hash: Hash,
    password: Vec<u8>,
    client_nonce: String,
    first_bare: String,
}

/// What the client sends second, and what it then expects.
pub(crate) struct Final {
    /// The client-final message.
    pub(crate) message: String,
    server_key: hmac::Key,
    auth_message: String,
}

impl Client {
    /// Starts an exchange: the client-first message to send, and the state.
    pub(crate) fn start(hash: Hash, username: &str, password: &str, nonce: &str) -> (String, Self) {
        let first_bare = format!("n={},r={nonce}", escape(username));
        let first = format!("n,,{first_bare}");
        let client = Client {
            hash,
            password: password.as_bytes().to_vec(),
            client_nonce: nonce.to_owned(),
            first_bare,
        };
        (first, client)
    }

    /// Answers the server-first message.
    pub(crate) fn respond(self, server_first: &[u8]) -> Result<Final, ScramError> {
        let text =
            std::str::from_utf8(server_first).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        if let Some(e) = attribute(text, 'e') {
            return Err(ScramError::Refused(e.to_owned()));
        }
        if attribute(text, 'm').is_some() {
            return Err(ScramError::Extension);
        }
        let nonce = attribute(text, 'r').ok_or(ScramError::Malformed("no nonce"))?;
        let salt = attribute(text, 's').ok_or(ScramError::Malformed("no salt"))?;
        let salt = B64
            .decode(salt)
            .map_err(|_| ScramError::Malformed("salt is not base64"))?;
        let iterations = attribute(text, 'i')
            .and_then(|i| i.parse::<u32>().ok())
            .filter(|i| *i <= MAX_ITERATIONS)
            .ok_or(ScramError::Malformed("iteration count"))?;
        if iterations < MIN_ITERATIONS {
            return Err(ScramError::TooFewIterations(iterations));
        }
        let iterations = NonZeroU32::new(iterations).ok_or(ScramError::TooFewIterations(0))?;
        if !nonce.starts_with(&self.client_nonce) || nonce.len() == self.client_nonce.len() {
            return Err(ScramError::Nonce);
        }
        let mut salted = vec![0u8; self.hash.digest().output_len()];
        pbkdf2::derive(
            self.hash.pbkdf2(),
            iterations,
            &salt,
            &self.password,
            &mut salted,
        );
        let salted = hmac::Key::new(self.hash.hmac(), &salted);
        let client_key = hmac::sign(&salted, b"Client Key");
        let stored_key = digest::digest(self.hash.digest(), client_key.as_ref());
        // "biws" is base64 of "n,,": no channel binding, no authzid.
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{text},{without_proof}", self.first_bare);
        let signature = hmac::sign(
            &hmac::Key::new(self.hash.hmac(), stored_key.as_ref()),
            auth_message.as_bytes(),
        );
        let proof: Vec<u8> = client_key
            .as_ref()
            .iter()
            .zip(signature.as_ref())
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hmac::sign(&salted, b"Server Key");
        Ok(Final {
            message: format!("{without_proof},p={}", B64.encode(proof)),
            server_key: hmac::Key::new(self.hash.hmac(), server_key.as_ref()),
            auth_message,
        })
    }
}

impl Final {
    /// Checks the server-final message: the broker proves it holds the keys.
    pub(crate) fn verify(&self, server_final: &[u8]) -> Result<(), ScramError> {
        let text =
            std::str::from_utf8(server_final).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        if let Some(e) = attribute(text, 'e') {
            return Err(ScramError::Refused(e.to_owned()));
        }
        let v = attribute(text, 'v').ok_or(ScramError::Malformed("no verifier"))?;
        let v = B64
            .decode(v)
            .map_err(|_| ScramError::Malformed("verifier is not base64"))?;
        // In constant time.
        hmac::verify(&self.server_key, self.auth_message.as_bytes(), &v)
            .map_err(|_| ScramError::ServerSignature)
    }
}

/// The value of attribute `name` (`name=value`) in a SCRAM message.
pub(super) fn attribute(message: &str, name: char) -> Option<&str> {
    message.split(',').find_map(|part| {
        let mut chars = part.chars();
        (chars.next() == Some(name) && chars.next() == Some('=')).then(|| &part[2..])
    })
}

/// A username as SCRAM writes it: `,` and `=` escaped.
fn escape(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7677, section 3.
    const NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
    const SERVER_FIRST: &str =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";

    #[test]
    fn the_rfc_7677_exchange() {
        let (first, client) = Client::start(Hash::Sha256, "user", "pencil", NONCE);
        assert_eq!(first, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let fin = client.respond(SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(
            fin.message,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        fin.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        assert_eq!(
            fin.verify(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
            Err(ScramError::ServerSignature)
        );
        assert_eq!(
            fin.verify(b"e=invalid-proof"),
            Err(ScramError::Refused("invalid-proof".into()))
        );
    }

    #[test]
    fn a_broker_nonce_must_extend_the_proxys_and_iterations_are_bounded() {
        let start = || Client::start(Hash::Sha512, "a,b=c", "pw", NONCE);
        assert_eq!(start().0, "n,,n=a=2Cb=3Dc,r=rOprNGfwEbeRWgbNEkqO");
        let other = "r=somethingelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        assert_eq!(
            start().1.respond(other.as_bytes()).err(),
            Some(ScramError::Nonce)
        );
        let same = format!("r={NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
        assert_eq!(
            start().1.respond(same.as_bytes()).err(),
            Some(ScramError::Nonce)
        );
        let slow = format!("r={NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999");
        assert_eq!(
            start().1.respond(slow.as_bytes()).err(),
            Some(ScramError::Malformed("iteration count"))
        );
        // SHA-512 proofs are 64 bytes.
        let fine = format!("r={NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
        let fin = start().1.respond(fine.as_bytes()).unwrap();
        let proof = fin.message.rsplit("p=").next().unwrap();
        assert_eq!(B64.decode(proof).unwrap().len(), 64);
    }

    #[test]
    fn fewer_than_4096_iterations_are_refused_before_any_proof_is_made() {
        let start = || Client::start(Hash::Sha256, "user", "pencil", NONCE);
        for (i, refused) in [
            (1, Some(ScramError::TooFewIterations(1))),
            (4095, Some(ScramError::TooFewIterations(4095))),
            (0, Some(ScramError::TooFewIterations(0))),
            (4096, None),
        ] {
            let first = format!("r={NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i={i}");
            assert_eq!(start().1.respond(first.as_bytes()).err(), refused, "i={i}");
        }
        assert_eq!(
            ScramError::TooFewIterations(1).to_string(),
            "the broker asks for 1 PBKDF2 iterations, fewer than 4096"
        );
    }

    #[test]
    fn a_mandatory_extension_is_refused() {
        let start = || Client::start(Hash::Sha256, "user", "pencil", NONCE);
        for first in [
            format!("m=ext,r={NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
            format!("m=,r={NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
        ] {
            assert_eq!(
                start().1.respond(first.as_bytes()).err(),
                Some(ScramError::Extension),
                "{first}"
            );
        }
    }
}
