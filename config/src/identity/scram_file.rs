//! The SCRAM credentials file a terminating proxy checks clients against
//! (`authentication.sasl.credentialsFile`): salted keys, never passwords.
//! One line per user and mechanism, as `sluice-proxy scram-credential`
//! writes them; `#` starts a comment line:
//!
//! ```text
//! alice SCRAM-SHA-512 iterations=8192 salt=<base64> stored-key=<base64> server-key=<base64>
//! ```
//!
//! The keys are RFC 5802's: `StoredKey = H(HMAC(SaltedPassword, "Client
//! Key"))`, `ServerKey = HMAC(SaltedPassword, "Server Key")`. Knowing them
//! lets no one log in as the user (that takes the password, or the
//! ClientKey a proof reveals only to the server), though a stolen file can
//! be attacked offline like any password hash: keep it a Secret.

use std::collections::HashMap;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

use crate::types::SaslMechanism;

/// Fewest PBKDF2 iterations a line may give (RFC 7677's minimum).
pub const MIN_ITERATIONS: u32 = 4096;
/// Most: a client's login costs the proxy this many rounds.
pub const MAX_ITERATIONS: u32 = 65_536;
/// Most lines read: a credentials file is not a user database.
pub const MAX_ENTRIES: usize = 100_000;

/// One user's salted keys for one mechanism.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramKeys {
    /// PBKDF2 rounds.
    pub iterations: u32,
    /// The salt.
    pub salt: Vec<u8>,
    /// `H(ClientKey)`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
}

impl fmt::Debug for ScramKeys {
    // The keys stay out of every output.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScramKeys(iterations={})", self.iterations)
    }
}

/// Every user's keys, by user and mechanism.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ScramUsers(HashMap<(String, SaslMechanism), ScramKeys>);

impl fmt::Debug for ScramUsers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScramUsers({} entries)", self.0.len())
    }
}

impl ScramUsers {
    /// `user`'s keys for `mechanism`.
    pub fn get(&self, user: &str, mechanism: SaslMechanism) -> Option<&ScramKeys> {
        self.0.get(&(user.to_owned(), mechanism))
    }

    /// Whether `user` has keys for any mechanism.
    pub fn knows(&self, user: &str) -> bool {
        SaslMechanism::PASSWORDS
            .iter()
            .any(|m| self.0.contains_key(&(user.to_owned(), *m)))
    }

    /// The iterations of some entry of `mechanism` (a stand-in for an
    /// unknown user costs the same as a known one).
    pub fn any_iterations(&self, mechanism: SaslMechanism) -> Option<u32> {
        (self.0.iter())
            .find(|((_, m), _)| *m == mechanism)
            .map(|(_, k)| k.iterations)
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads a credentials file; the first bad line's number and why.
    pub fn parse(text: &str) -> Result<ScramUsers, String> {
        let mut users = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |why: String| format!("line {}: {why}", n + 1);
            let (user, mechanism, keys) = entry(line).map_err(at)?;
            if users.len() >= MAX_ENTRIES {
                return Err(at(format!("more than {MAX_ENTRIES} entries")));
            }
            if users.insert((user.clone(), mechanism), keys).is_some() {
                return Err(at(format!("{user:?} has a second {mechanism} entry")));
            }
        }
        Ok(ScramUsers(users))
    }
}

/// One line: user, mechanism, keys. Errors name no key material.
fn entry(line: &str) -> Result<(String, SaslMechanism, ScramKeys), String> {
    let mut words = line.split_ascii_whitespace();
    let (Some(user), Some(mechanism)) = (words.next(), words.next()) else {
        return Err(
            "expected: USER MECHANISM iterations=N salt=… stored-key=… server-key=…".into(),
        );
    };
    let mechanism = match SaslMechanism::PASSWORDS
        .iter()
        .find(|m| m.as_str() == mechanism)
    {
        Some(m) if *m != SaslMechanism::Plain => *m,
        _ => {
            return Err(format!(
                "{mechanism:?} is not SCRAM-SHA-256 or SCRAM-SHA-512"
            ));
        }
    };
    let len = match mechanism {
        SaslMechanism::ScramSha512 => 64,
        _ => 32,
    };
    let mut fields: HashMap<&str, &str> = HashMap::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(format!("{word:?} is not key=value"));
        };
        if fields.insert(key, value).is_some() {
            return Err(format!("{key} is given twice"));
        }
    }
    let field = |key: &str| fields.get(key).copied().ok_or(format!("{key}= is missing"));
    let bytes = |key: &str| {
        B64.decode(field(key)?)
            .map_err(|_| format!("{key} is not base64"))
    };
    let iterations: u32 = field("iterations")?
        .parse()
        .map_err(|_| "iterations is not a whole number".to_owned())?;
    if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
        return Err(format!(
            "iterations {iterations} is out of range {MIN_ITERATIONS}-{MAX_ITERATIONS}"
        ));
    }
    let keys = ScramKeys {
        iterations,
        salt: bytes("salt")?,
        stored_key: bytes("stored-key")?,
        server_key: bytes("server-key")?,
    };
    if keys.salt.len() < 16 {
        return Err("salt is shorter than 16 bytes".into());
    }
    if keys.stored_key.len() != len || keys.server_key.len() != len {
        return Err(format!("{mechanism} keys are {len} bytes each"));
    }
    if let Some(other) = fields
        .keys()
        .find(|k| !["iterations", "salt", "stored-key", "server-key"].contains(k))
    {
        return Err(format!("unknown field {other:?}"));
    }
    if user.chars().count() > super::MAX_PRINCIPAL_CHARS {
        return Err(format!(
            "a user name is at most {} characters",
            super::MAX_PRINCIPAL_CHARS
        ));
    }
    Ok((user.to_owned(), mechanism, keys))
}

/// A credentials line for `user`: what `sluice-proxy scram-credential`
/// prints (the keys derived by the caller, which has the crypto).
pub fn line(user: &str, mechanism: SaslMechanism, keys: &ScramKeys) -> String {
    format!(
        "{user} {mechanism} iterations={} salt={} stored-key={} server-key={}",
        keys.iterations,
        B64.encode(&keys.salt),
        B64.encode(&keys.stored_key),
        B64.encode(&keys.server_key),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(len: usize) -> ScramKeys {
        ScramKeys {
            iterations: 4096,
            salt: vec![1; 16],
            stored_key: vec![2; len],
            server_key: vec![3; len],
        }
    }

    #[test]
    fn lines_round_trip_and_bad_ones_are_named_by_number() {
        let text = format!(
            "# users\n{}\n\n{}\n",
            line("alice", SaslMechanism::ScramSha512, &keys(64)),
            line("bob", SaslMechanism::ScramSha256, &keys(32)),
        );
        let users = ScramUsers::parse(&text).unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(
            users.get("alice", SaslMechanism::ScramSha512),
            Some(&keys(64))
        );
        assert!(users.get("alice", SaslMechanism::ScramSha256).is_none());
        assert!(users.knows("bob") && !users.knows("carol"));

        let good = line("alice", SaslMechanism::ScramSha512, &keys(64));
        let cases = [
            ("alice", "line 2: expected: USER MECHANISM"),
            (
                "alice PLAIN iterations=4096",
                "line 2: \"PLAIN\" is not SCRAM",
            ),
            (
                &good.replace("iterations=4096", "iterations=12"),
                "out of range",
            ),
            (&good.replace("salt=", "salt=!"), "salt is not base64"),
            (
                &good.replace(" server-key=", " x=1 server-key="),
                "unknown field \"x\"",
            ),
            (
                &line("a", SaslMechanism::ScramSha512, &keys(32)),
                "64 bytes each",
            ),
            (&good, "line 2: \"alice\" has a second SCRAM-SHA-512 entry"),
        ];
        for (bad, expected) in cases {
            let err = ScramUsers::parse(&format!("{good}\n{bad}\n")).unwrap_err();
            assert!(err.contains(expected), "{bad}: {err}");
            assert!(!err.contains("AgICAgIC"), "no key material in {err}");
        }
    }
}
