//! The SASL mechanisms the proxy speaks, as Kafka names them: for its own
//! connections upstream (`upstream.sasl`) and for clients it authenticates
//! (`authentication.sasl`).

use std::fmt;

/// A SASL mechanism the proxy can authenticate with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SaslMechanism {
    /// RFC 4616: the password is sent as it is (so only with upstream TLS).
    Plain,
    /// RFC 7677: SCRAM with SHA-256.
    ScramSha256,
    /// SCRAM with SHA-512, as Kafka names it.
    ScramSha512,
    /// RFC 7628: a bearer token (a JWT), which the proxy verifies when it
    /// terminates SASL; never one the proxy uses upstream.
    OAuthBearer,
}

impl SaslMechanism {
    /// Every mechanism, by the name Kafka (and the configuration) uses.
    pub const ALL: [SaslMechanism; 4] = [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
        SaslMechanism::OAuthBearer,
    ];

    /// The mechanisms of a user and a password: what a credentials file
    /// holds and what the proxy itself uses upstream.
    pub const PASSWORDS: [SaslMechanism; 3] = [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
    ];

    /// Whether it proves a user by a password (PLAIN, SCRAM).
    pub fn uses_password(self) -> bool {
        SaslMechanism::PASSWORDS.contains(&self)
    }

    /// The name Kafka's SaslHandshake uses.
    pub fn as_str(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }
}

impl fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
