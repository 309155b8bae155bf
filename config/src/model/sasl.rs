//! The typed `upstream.sasl`, part of the model; [`crate::sasl`] reads it
//! and checks it (and re-exports these types, where callers find them).

use std::fmt;

use crate::files::FileRef;
use crate::tls::Loaded;

pub use crate::types::SaslMechanism;

/// `upstream.sasl`: how the proxy authenticates its own connections.
#[derive(Clone, PartialEq)]
pub struct UpstreamSasl {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// File holding the username.
    pub username_file: FileRef,
    /// File holding the password.
    pub password_file: FileRef,
    /// What the files hold; `None` when files were not read
    /// ([`crate::files::PathsOnly`]).
    pub credentials: Loaded<Option<Credentials>>,
}

impl fmt::Debug for UpstreamSasl {
    // Paths only: the files' digests stay out of any output.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamSasl")
            .field("mechanism", &self.mechanism)
            .field("username_file", &self.username_file.path)
            .field("password_file", &self.password_file.path)
            .finish_non_exhaustive()
    }
}

/// A username and its password.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The username.
    pub username: String,
    /// The password.
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials(..)")
    }
}
