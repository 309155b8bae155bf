//! A token issuer for tests of OAUTHBEARER: an ECDSA P-256 key made at
//! start, its key set (JWKS) to write where the proxy reads it, and JWTs
//! signed with it (or not signed at all, or by a stranger's key).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// The issuer and audience of [`Issuer::claims`].
pub const ISSUER: &str = "https://issuer.test";
/// The audience tokens are for.
pub const AUDIENCE: &str = "kafka";

/// A signing key and its id.
pub struct Issuer {
    key: EcdsaKeyPair,
    kid: String,
}

impl Issuer {
    /// A new key, named `kid`.
    pub fn new(kid: &str) -> Issuer {
        let rng = SystemRandom::new();
        let alg = &ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("a P-256 key");
        let key = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).expect("its key pair");
        Issuer {
            key,
            kid: kid.to_owned(),
        }
    }

    /// The key set holding this issuer's public key, as JSON text.
    pub fn jwks(&self) -> String {
        let point = self.key.public_key().as_ref();
        let (x, y) = point[1..].split_at(32);
        json!({"keys": [{
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256",
            "kid": self.kid, "x": B64URL.encode(x), "y": B64URL.encode(y),
        }]})
        .to_string()
    }

    /// Claims for `subject`, valid for `ttl_secs` from now (negative:
    /// expired that long ago), of [`ISSUER`] for [`AUDIENCE`].
    pub fn claims(subject: &str, ttl_secs: i64) -> Value {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs() as i64;
        json!({"sub": subject, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + ttl_secs})
    }

    /// A JWT of `claims`, signed (ES256).
    pub fn token(&self, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "typ": "JWT", "kid": self.kid});
        let signed = format!("{}.{}", part(&header), part(claims));
        let rng = SystemRandom::new();
        let sig = self.key.sign(&rng, signed.as_bytes()).expect("sign");
        format!("{signed}.{}", B64URL.encode(sig.as_ref()))
    }

    /// A JWT of `claims` with `alg: none` and no signature.
    pub fn unsigned(claims: &Value) -> String {
        let header = json!({"alg": "none", "typ": "JWT"});
        format!("{}.{}.", part(&header), part(claims))
    }
}

fn part(value: &Value) -> String {
    B64URL.encode(value.to_string())
}
