//! A JSON Web Key Set (RFC 7517): the public keys that sign the bearer
//! tokens of `authentication.sasl.oauthBearer`. Pure: the keys are read
//! and checked for shape here (their bytes decoded, their sizes right); the
//! proxy verifies signatures with them.
//!
//! Keys of other types (`oct`, encryption keys: `"use": "enc"`) are left
//! out, as a verifier of signatures has no use for them; a set with no key
//! the proxy can verify with is an error.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use serde_json::Value;

/// Most keys a set may hold (an identity provider publishes a handful).
const MAX_KEYS: usize = 64;

/// A signature algorithm of JWS (RFC 7518) the proxy verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JwsAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    Rs384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    Rs512,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// ECDSA on P-384 with SHA-384.
    Es384,
    /// Ed25519.
    EdDsa,
}

impl JwsAlgorithm {
    /// Every algorithm, by its JWS name.
    pub const ALL: [JwsAlgorithm; 6] = [
        JwsAlgorithm::Rs256,
        JwsAlgorithm::Rs384,
        JwsAlgorithm::Rs512,
        JwsAlgorithm::Es256,
        JwsAlgorithm::Es384,
        JwsAlgorithm::EdDsa,
    ];

    /// Its name in a token's header (`alg`).
    pub fn name(self) -> &'static str {
        match self {
            JwsAlgorithm::Rs256 => "RS256",
            JwsAlgorithm::Rs384 => "RS384",
            JwsAlgorithm::Rs512 => "RS512",
            JwsAlgorithm::Es256 => "ES256",
            JwsAlgorithm::Es384 => "ES384",
            JwsAlgorithm::EdDsa => "EdDSA",
        }
    }

    /// The algorithm named `name`.
    pub fn by_name(name: &str) -> Option<JwsAlgorithm> {
        JwsAlgorithm::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether a key can verify its signatures.
    pub fn fits(self, key: &PublicKey) -> bool {
        matches!(
            (self, key),
            (
                JwsAlgorithm::Rs256 | JwsAlgorithm::Rs384 | JwsAlgorithm::Rs512,
                PublicKey::Rsa { .. }
            ) | (JwsAlgorithm::Es256, PublicKey::P256 { .. })
                | (JwsAlgorithm::Es384, PublicKey::P384 { .. })
                | (JwsAlgorithm::EdDsa, PublicKey::Ed25519 { .. })
        )
    }
}

impl fmt::Display for JwsAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A public key's material.
#[derive(Clone, PartialEq, Eq)]
pub enum PublicKey {
    /// RSA: the modulus and the public exponent, big-endian.
    Rsa {
        /// The modulus.
        n: Vec<u8>,
        /// The public exponent.
        e: Vec<u8>,
    },
    /// A P-256 point, uncompressed (0x04, x, y).
    P256 {
        /// The point.
        point: Vec<u8>,
    },
    /// A P-384 point, uncompressed.
    P384 {
        /// The point.
        point: Vec<u8>,
    },
    /// An Ed25519 public key.
    Ed25519 {
        /// Its 32 bytes.
        x: Vec<u8>,
    },
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PublicKey::Rsa { .. } => "Rsa",
            PublicKey::P256 { .. } => "P256",
            PublicKey::P384 { .. } => "P384",
            PublicKey::Ed25519 { .. } => "Ed25519",
        })
    }
}

/// One key of the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jwk {
    /// Its id (`kid`): a token naming one is verified by that key only.
    pub kid: Option<String>,
    /// The one algorithm it is for (`alg`), if the set says.
    pub alg: Option<JwsAlgorithm>,
    /// The key.
    pub key: PublicKey,
}

/// A key set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Jwks {
    /// The keys the proxy can verify with, in the file's order.
    pub keys: Vec<Jwk>,
}

impl Jwks {
    /// Reads a JWKS document (`{"keys": [...]}`).
    pub fn parse(text: &str) -> Result<Jwks, String> {
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let Some(Value::Array(keys)) = doc.get("keys") else {
            return Err("not a key set: no \"keys\" array".to_owned());
        };
        if keys.len() > MAX_KEYS {
            return Err(format!("{} keys, more than {MAX_KEYS}", keys.len()));
        }
        let mut out = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if let Some(jwk) = jwk(key).map_err(|why| format!("keys[{i}]: {why}"))? {
                out.push(jwk);
            }
        }
        if out.is_empty() {
            return Err("holds no RSA, EC (P-256, P-384) or Ed25519 signing key".to_owned());
        }
        Ok(Jwks { keys: out })
    }
}

/// One key, or `None` for a key the proxy has no use for.
fn jwk(key: &Value) -> Result<Option<Jwk>, String> {
    let text = |name: &str| key.get(name).and_then(Value::as_str);
    if text("use").is_some_and(|u| u != "sig") {
        return Ok(None);
    }
    let bytes = |name: &str| -> Result<Vec<u8>, String> {
        let value = text(name).ok_or_else(|| format!("no {name:?}"))?;
        B64URL
            .decode(value.trim_end_matches('='))
            .map_err(|_| format!("{name:?} is not base64url"))
    };
    let material = match text("kty") {
        Some("RSA") => {
            let (n, e) = (bytes("n")?, bytes("e")?);
            let bits = n.iter().skip_while(|b| **b == 0).count() * 8;
            if !(2048..=8192).contains(&bits) {
                return Err(format!("an RSA modulus of {bits} bits (2048 to 8192)"));
            }
            PublicKey::Rsa { n, e }
        }
        Some("EC") => {
            let size = match text("crv") {
                Some("P-256") => 32,
                Some("P-384") => 48,
                Some(other) => return Err(format!("curve {other:?} (P-256 or P-384)")),
                None => return Err("no \"crv\"".to_owned()),
            };
            let (x, y) = (bytes("x")?, bytes("y")?);
            if x.len() != size || y.len() != size {
                return Err(format!("x and y must be {size} bytes"));
            }
            let point = [&[4u8][..], &x, &y].concat();
            if size == 32 {
                PublicKey::P256 { point }
            } else {
                PublicKey::P384 { point }
            }
        }
        Some("OKP") if text("crv") == Some("Ed25519") => {
            let x = bytes("x")?;
            if x.len() != 32 {
                return Err("an Ed25519 x must be 32 bytes".to_owned());
            }
            PublicKey::Ed25519 { x }
        }
        Some(_) => return Ok(None),
        None => return Err("no \"kty\"".to_owned()),
    };
    let alg = match text("alg") {
        None => None,
        Some(name) => match JwsAlgorithm::by_name(name) {
            Some(alg) if alg.fits(&material) => Some(alg),
            Some(alg) => return Err(format!("alg {alg} does not fit a {material:?} key")),
            None => return Ok(None),
        },
    };
    Ok(Some(Jwk {
        kid: text("kid").map(str::to_owned),
        alg,
        key: material,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        B64URL.encode(bytes)
    }

    #[test]
    fn keys_of_each_type_are_read_and_others_left_out() {
        let n = b64(&[0xc5; 256]);
        let p = b64(&[7; 32]);
        let doc = format!(
            r#"{{"keys": [
                {{"kty": "RSA", "kid": "r", "alg": "RS256", "n": "{n}", "e": "AQAB"}},
                {{"kty": "EC", "crv": "P-256", "x": "{p}", "y": "{p}", "kid": "e"}},
                {{"kty": "OKP", "crv": "Ed25519", "x": "{p}"}},
                {{"kty": "oct", "k": "c2VjcmV0"}},
                {{"kty": "RSA", "use": "enc", "n": "{n}", "e": "AQAB"}}
            ]}}"#
        );
        let set = Jwks::parse(&doc).unwrap();
        assert_eq!(set.keys.len(), 3);
        assert_eq!(set.keys[0].alg, Some(JwsAlgorithm::Rs256));
        assert_eq!(set.keys[1].kid.as_deref(), Some("e"));
        assert!(matches!(&set.keys[1].key, PublicKey::P256 { point } if point.len() == 65));
        assert!(matches!(set.keys[2].key, PublicKey::Ed25519 { .. }));
    }

    #[test]
    fn a_bad_set_says_what_is_wrong() {
        let small = b64(&[0xc5; 128]);
        let cases = [
            ("nope", "not JSON"),
            ("{}", "no \"keys\" array"),
            (r#"{"keys": []}"#, "holds no RSA"),
            (r#"{"keys": [{"kty": "oct", "k": "eA"}]}"#, "holds no RSA"),
            (r#"{"keys": [{"n": "AQAB"}]}"#, "keys[0]: no \"kty\""),
            (
                r#"{"keys": [{"kty": "EC", "crv": "P-256", "x": "AQ", "y": "AQ"}]}"#,
                "32 bytes",
            ),
            (
                r#"{"keys": [{"kty": "EC", "crv": "secp256k1", "x": "AQ", "y": "AQ"}]}"#,
                "curve",
            ),
            (
                r#"{"keys": [{"kty": "RSA", "n": "!!", "e": "AQAB"}]}"#,
                "base64url",
            ),
        ];
        for (doc, words) in cases {
            let why = Jwks::parse(doc).unwrap_err();
            assert!(why.contains(words), "{doc}: {why}");
        }
        let doc = format!(r#"{{"keys": [{{"kty": "RSA", "n": "{small}", "e": "AQAB"}}]}}"#);
        assert!(Jwks::parse(&doc).unwrap_err().contains("1024 bits"));
        let p = b64(&[7; 32]);
        let doc = format!(
            r#"{{"keys": [{{"kty": "EC", "crv": "P-256", "x": "{p}", "y": "{p}", "alg": "RS256"}}]}}"#
        );
        assert!(Jwks::parse(&doc).unwrap_err().contains("does not fit"));
    }
}
