//! Who a client is: `virtualClusters[].authentication`, the source of each
//! connection's principal. Pure: the rules and how they map a verified
//! client certificate's names to a principal; the proxy reads the names
//! from the certificate and asks [`MtlsPrincipals::principal`].
//!
//! ```yaml
//! authentication:
//!   mtls:
//!     principals:                      # in order: the first rule that matches gives it
//!       - from: uri                    # subject | dns | uri | email
//!         match: "spiffe://example.org/ns/([a-z0-9-]+)/sa/([a-z0-9-]+)"
//!         principal: "$1/$2"
//!       - from: subject
//!         match: "CN=([^,]+),OU=(?:orders|billing),O=Example"
//!         principal: "$1"
//!         case: lower
//!   sasl:                              # or: the proxy terminates SASL
//!     mechanisms: [SCRAM-SHA-512, OAUTHBEARER] # SCRAM-SHA-256, SCRAM-SHA-512, PLAIN (gateway TLS only), OAUTHBEARER
//!     credentialsFile: users.scram     # salted keys (`sluice-proxy scram-credential`)
//!     oauthBearer:                     # JWTs verified against a key set
//!       jwksFile: jwks.json
//!       issuer: https://idp.example
//!       audience: kafka
//!   required: true                     # a client without a principal is refused
//! ```
//!
//! Like Kafka's `ssl.principal.mapping.rules`, a pattern must match the
//! whole name (it is anchored at both ends), the principal is the
//! replacement with `$1`… substituted, and the subject is written as RFC 4514
//! writes a distinguished name (`CN=alice,OU=orders,O=Example`: the most
//! specific part first, no spaces after commas). A rule without `match`
//! takes the whole name (Kafka's `DEFAULT`).

use std::fmt;

use regex::Regex;

pub mod jwks;
mod oauth;
mod read;
pub mod scram_file;

pub use jwks::{Jwk, Jwks, JwsAlgorithm, PublicKey};
pub use oauth::{DEFAULT_CLAIM, OAuthBearer};
pub(crate) use read::{GatewayTls, authentication};
pub use scram_file::{ScramKeys, ScramUsers};

use crate::files::FileRef;
use crate::tls::Loaded;
use crate::types::SaslMechanism;

/// Longest principal the proxy keeps (longer ones are refused as no
/// principal): principals become labels and audit fields.
pub const MAX_PRINCIPAL_CHARS: usize = 256;

/// A virtual cluster's `authentication`.
#[derive(Debug, Clone, PartialEq)]
pub struct Authentication {
    /// Principals from verified client certificates.
    pub mtls: Option<MtlsPrincipals>,
    /// Principals from SASL, which the proxy terminates.
    pub sasl: Option<SaslTermination>,
    /// Principals from SASL, which the broker checks and the proxy reads
    /// (`saslInspection`): the user a client authenticated as, once the
    /// broker says it succeeded.
    pub sasl_inspection: Option<SaslInspection>,
    /// Whether a client without a principal is refused.
    pub required: bool,
}

/// `authentication.saslInspection`: what the proxy reads of a login the
/// broker checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslInspection {
    /// The claim of an OAUTHBEARER token that is the principal.
    pub principal_claim: String,
}

/// `authentication.sasl`: the proxy authenticates clients itself
/// (SaslHandshake and SaslAuthenticate answered by the proxy, nothing sent
/// upstream before they succeed) against a credentials file of salted keys;
/// the user is the principal.
#[derive(Debug, Clone, PartialEq)]
pub struct SaslTermination {
    /// The mechanisms offered, in the configuration's order.
    pub mechanisms: Vec<SaslMechanism>,
    /// The credentials file (its digest: a new content is a change), for
    /// PLAIN and SCRAM.
    pub credentials_file: Option<FileRef>,
    /// What it holds; `None` when files were not read (or there is none).
    pub users: Loaded<Option<ScramUsers>>,
    /// How OAUTHBEARER tokens are verified, when it is offered.
    pub oauth_bearer: Option<OAuthBearer>,
    /// How long an authentication holds (KIP-368): reported to the client,
    /// which re-authenticates before it ends; a connection that does not is
    /// closed. `None`: it holds for the connection's life.
    pub session_lifetime: Option<std::time::Duration>,
}

/// The ordered rules that map a client certificate to a principal.
#[derive(Debug, Clone, PartialEq)]
pub struct MtlsPrincipals {
    /// In order; the first that matches decides.
    pub rules: Vec<PrincipalRule>,
}

/// Which of a certificate's names a rule reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameSource {
    /// The subject's distinguished name (RFC 4514).
    Subject,
    /// Each DNS name among the subject alternative names.
    Dns,
    /// Each URI among them (SPIFFE ids are URIs).
    Uri,
    /// Each email address among them.
    Email,
}

impl NameSource {
    /// Every source, in the order the docs list them.
    pub const ALL: [NameSource; 4] = [
        NameSource::Subject,
        NameSource::Dns,
        NameSource::Uri,
        NameSource::Email,
    ];

    /// The name the configuration uses.
    pub fn name(self) -> &'static str {
        match self {
            NameSource::Subject => "subject",
            NameSource::Dns => "dns",
            NameSource::Uri => "uri",
            NameSource::Email => "email",
        }
    }
}

/// What a rule does to the case of the principal it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Case {
    /// As the replacement gives it.
    #[default]
    AsIs,
    /// Lower case (Kafka's `/L`).
    Lower,
    /// Upper case (Kafka's `/U`).
    Upper,
}

impl Case {
    /// Every case, as the configuration names them.
    pub const ALL: [(Case, &'static str); 3] = [
        (Case::AsIs, "as-is"),
        (Case::Lower, "lower"),
        (Case::Upper, "upper"),
    ];
}

/// One mapping rule.
#[derive(Debug, Clone)]
pub struct PrincipalRule {
    /// The name it reads.
    pub from: NameSource,
    /// The pattern as written; `None`: the whole name.
    pub pattern: Option<String>,
    /// The pattern anchored at both ends.
    matcher: Option<Regex>,
    /// The replacement (`$1`, `${name}` substituted).
    pub principal: String,
    /// The case of the result.
    pub case: Case,
}

impl PartialEq for PrincipalRule {
    fn eq(&self, other: &Self) -> bool {
        self.from == other.from
            && self.pattern == other.pattern
            && self.principal == other.principal
            && self.case == other.case
    }
}

/// Largest compiled pattern, in bytes (the regex crate's size limit).
const MAX_PATTERN_BYTES: usize = 1 << 20;

/// A pattern that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPattern(String);

impl fmt::Display for BadPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PrincipalRule {
    /// A rule; the pattern is compiled (anchored) here.
    pub fn new(
        from: NameSource,
        pattern: Option<&str>,
        principal: &str,
        case: Case,
    ) -> Result<Self, BadPattern> {
        let matcher = match pattern {
            Some(p) => Some(
                regex::RegexBuilder::new(&format!("^(?:{p})$"))
                    .size_limit(MAX_PATTERN_BYTES)
                    .build()
                    .map_err(|e| BadPattern(last_line(&e.to_string())))?,
            ),
            None => None,
        };
        if let Some(m) = &matcher {
            check_groups(principal, m.captures_len() - 1)?;
        }
        Ok(PrincipalRule {
            from,
            pattern: pattern.map(str::to_owned),
            matcher,
            principal: principal.to_owned(),
            case,
        })
    }

    /// The principal this rule gives `name`, when it matches.
    fn apply(&self, name: &str) -> Option<String> {
        let out = match &self.matcher {
            None => name.to_owned(),
            Some(m) => {
                let caps = m.captures(name)?;
                let mut out = String::new();
                caps.expand(&self.principal, &mut out);
                out
            }
        };
        let out = match self.case {
            Case::AsIs => out,
            Case::Lower => out.to_lowercase(),
            Case::Upper => out.to_uppercase(),
        };
        (!out.is_empty() && out.chars().count() <= MAX_PRINCIPAL_CHARS).then_some(out)
    }
}

/// The regex crate's message without the pattern it quotes: its last line.
fn last_line(s: &str) -> String {
    let last = s
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or_default();
    format!("invalid pattern: {}", last.trim_start_matches("error: "))
}

/// Refuses a replacement naming a numbered group the pattern lacks (the
/// regex crate would put nothing there, silently).
fn check_groups(replacement: &str, groups: usize) -> Result<(), BadPattern> {
    let bytes = replacement.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' {
            let digits: String = replacement[i + 1..]
                .trim_start_matches('{')
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse::<usize>()
                && n > groups
            {
                return Err(BadPattern(format!(
                    "principal names group ${n}, but the pattern has {groups} group(s)"
                )));
            }
            i += 1 + digits.len();
        } else {
            i += 1;
        }
    }
    Ok(())
}

/// The names of a verified client certificate that rules read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertNames {
    /// The subject, RFC 4514.
    pub subject: String,
    /// DNS names among the subject alternative names.
    pub dns: Vec<String>,
    /// URIs among them.
    pub uri: Vec<String>,
    /// Email addresses among them.
    pub email: Vec<String>,
}

impl CertNames {
    fn of(&self, source: NameSource) -> Vec<&str> {
        match source {
            NameSource::Subject => vec![self.subject.as_str()],
            NameSource::Dns => self.dns.iter().map(String::as_str).collect(),
            NameSource::Uri => self.uri.iter().map(String::as_str).collect(),
            NameSource::Email => self.email.iter().map(String::as_str).collect(),
        }
    }
}

impl MtlsPrincipals {
    /// The principal of a client with these certificate names: the first
    /// rule (in order) that matches one of the names it reads, on the
    /// first such name (in the certificate's order); `None` when none does.
    pub fn principal(&self, names: &CertNames) -> Option<String> {
        self.rules.iter().find_map(|rule| {
            names
                .of(rule.from)
                .into_iter()
                .find_map(|name| rule.apply(name))
        })
    }
}

#[cfg(test)]
mod tests;
