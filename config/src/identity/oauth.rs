//! `authentication.sasl.oauthBearer`: how the proxy verifies the JWTs of
//! OAUTHBEARER (RFC 7628) when it terminates SASL. Read here with every
//! error at its position; the proxy verifies with it.
//!
//! ```yaml
//! oauthBearer:
//!   jwksFile: jwks.json        # the issuer's public keys (RFC 7517)
//!   issuer: https://idp.example
//!   audience: kafka            # a token must name it in `aud`
//!   principalClaim: sub        # default
//!   clockSkew: 30s             # default; at most 5m
//!   algorithms: [RS256, ES256] # default; RS256 RS384 RS512 ES256 ES384 EdDSA
//! ```

use std::sync::Arc;
use std::time::Duration;

use super::jwks::{Jwks, JwsAlgorithm};
use crate::files::FileRef;
use crate::read::{Cx, Fields, index, list, string};
use crate::tls::{Loaded, read_parsed};
use crate::yaml::Node;

/// The claim that is the principal unless `principalClaim` says another.
pub const DEFAULT_CLAIM: &str = "sub";
const DEFAULT_SKEW: Duration = Duration::from_secs(30);
const MAX_SKEW: Duration = Duration::from_secs(300);
const DEFAULT_ALGORITHMS: [JwsAlgorithm; 2] = [JwsAlgorithm::Rs256, JwsAlgorithm::Es256];
const KEYS: &[&str] = &[
    "jwksFile",
    "issuer",
    "audience",
    "principalClaim",
    "clockSkew",
    "algorithms",
];

/// How bearer tokens are verified.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthBearer {
    /// The key set's file (its digest: a new content is a change).
    pub jwks_file: FileRef,
    /// Its keys; `None` when files were not read.
    pub jwks: Loaded<Option<Jwks>>,
    /// What a token's `iss` must be.
    pub issuer: String,
    /// What a token's `aud` must be or hold.
    pub audience: String,
    /// The claim that is the principal.
    pub principal_claim: String,
    /// How far a token's `exp` and `nbf` may be off the proxy's clock.
    pub clock_skew: Duration,
    /// The signature algorithms accepted (never `none`).
    pub algorithms: Vec<JwsAlgorithm>,
}

/// Reads an `oauthBearer` block.
pub(crate) fn oauth_bearer(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<OAuthBearer> {
    let f = Fields::of(cx, node, path, KEYS)?;
    let jwks = f.required(cx, "jwksFile", |cx, node, path| {
        read_parsed(cx, node, path, Jwks::parse)
    });
    let text = |cx: &mut Cx<'_>, node: &Node, path: &str| {
        let text = string(cx, node, path)?;
        if text.is_empty() {
            return cx.fail(path, node.mark, "must not be empty");
        }
        Some(text.to_owned())
    };
    let issuer = f.required(cx, "issuer", text);
    let audience = f.required(cx, "audience", text);
    let claim = f.optional(cx, "principalClaim", text);
    let skew = f.optional(cx, "clockSkew", |cx, node, path| {
        let written = string(cx, node, path)?;
        let d = cx.ok(path, node.mark, crate::types::parse_duration(written))?;
        if d > MAX_SKEW {
            return cx.fail(path, node.mark, format_args!("at most {MAX_SKEW:?}"));
        }
        Some(d)
    });
    let algorithms = f.optional(cx, "algorithms", algorithms);
    let bad = (claim.is_none() && f.has("principalClaim"))
        || (skew.is_none() && f.has("clockSkew"))
        || (algorithms.is_none() && f.has("algorithms"));
    let (jwks_file, jwks) = jwks?;
    let (issuer, audience) = (issuer?, audience?);
    if bad {
        return None;
    }
    Some(OAuthBearer {
        jwks_file,
        jwks: Loaded(Arc::new(jwks)),
        issuer,
        audience,
        principal_claim: claim.unwrap_or_else(|| DEFAULT_CLAIM.to_owned()),
        clock_skew: skew.unwrap_or(DEFAULT_SKEW),
        algorithms: algorithms.unwrap_or_else(|| DEFAULT_ALGORITHMS.to_vec()),
    })
}

fn algorithms(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Vec<JwsAlgorithm>> {
    let items = list(cx, node, path)?;
    if items.is_empty() {
        return cx.fail(path, node.mark, "must list at least one algorithm");
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let at = index(path, i);
        let Some(name) = string(cx, item, &at) else {
            ok = false;
            continue;
        };
        match JwsAlgorithm::by_name(name) {
            Some(alg) => out.push(alg),
            None => {
                let known: Vec<&str> = JwsAlgorithm::ALL.iter().map(|a| a.name()).collect();
                let why = if name.eq_ignore_ascii_case("none") {
                    "unsigned tokens (none) are never accepted".to_owned()
                } else {
                    format!(
                        "unknown algorithm {name:?}, expected one of: {}",
                        known.join(", ")
                    )
                };
                cx.error(&at, item.mark, why);
                ok = false;
            }
        }
    }
    ok.then_some(out)
}
