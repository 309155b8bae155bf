//! `virtualClusters[].authentication`, read with every error at its
//! position.

use std::sync::Arc;

use super::oauth::{DEFAULT_CLAIM, oauth_bearer};
use super::{
    Authentication, Case, MtlsPrincipals, NameSource, PrincipalRule, SaslInspection,
    SaslTermination, ScramUsers,
};
use crate::read::{Cx, Fields, boolean, index, list, string, suggest};
use crate::tls::{Loaded, read_parsed};
use crate::types::SaslMechanism;
use crate::yaml::Node;

const AUTHENTICATION_KEYS: &[&str] = &["mtls", "sasl", "saslInspection", "required"];
const SASL_KEYS: &[&str] = &[
    "mechanisms",
    "credentialsFile",
    "oauthBearer",
    "sessionLifetime",
];
const INSPECTION_KEYS: &[&str] = &["principalClaim"];
/// The shortest `sessionLifetime`: clients re-authenticate some time before
/// it ends.
const MIN_SESSION_LIFETIME: std::time::Duration = std::time::Duration::from_secs(10);

/// What the cluster's gateway does with TLS.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GatewayTls {
    /// Clients connect over TLS.
    pub(crate) tls: bool,
    /// Their certificates are verified (`gateway.tls.clientCaFile`).
    pub(crate) client_ca: bool,
}
const MTLS_KEYS: &[&str] = &["principals"];
const RULE_KEYS: &[&str] = &["from", "match", "principal", "case"];

/// Reads an `authentication` block; `gateway` says whether the cluster's
/// gateway speaks TLS (PLAIN needs it) and verifies client certificates
/// (`gateway.tls.clientCaFile`, which `mtls` needs).
pub(crate) fn authentication(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
    gateway: GatewayTls,
) -> Option<Authentication> {
    let f = Fields::of(cx, node, path, AUTHENTICATION_KEYS)?;
    let mtls = f.optional(cx, "mtls", |cx, node, path| {
        if !gateway.client_ca {
            return cx.fail(
                path,
                node.mark,
                "needs gateway.tls.clientCaFile: without it no client certificate is verified",
            );
        }
        mtls(cx, node, path)
    });
    let sasl = f.optional(cx, "sasl", |cx, node, path| {
        sasl(cx, node, path, gateway.tls)
    });
    let inspection = f.optional(cx, "saslInspection", inspection);
    let required = f.optional(cx, "required", boolean);
    if (mtls.is_none() && f.has("mtls"))
        || (sasl.is_none() && f.has("sasl"))
        || (inspection.is_none() && f.has("saslInspection"))
        || (required.is_none() && f.has("required"))
    {
        return None;
    }
    let sources = usize::from(mtls.is_some())
        + usize::from(sasl.is_some())
        + usize::from(inspection.is_some());
    match sources {
        0 => {
            return cx.fail(
                path,
                f.mark(),
                "names no source of principals: add mtls, sasl or saslInspection (or leave authentication out)",
            );
        }
        1 => {}
        _ => {
            return cx.fail(
                path,
                f.mark(),
                "one source of principals per cluster: mtls, sasl or saslInspection",
            );
        }
    }
    Some(Authentication {
        mtls,
        sasl,
        sasl_inspection: inspection,
        required: required.unwrap_or(false),
    })
}

/// `authentication.sasl`: the mechanisms the proxy offers and the
/// credentials file it checks them against; PLAIN only where clients speak
/// TLS (it sends the password as it is).
fn sasl(cx: &mut Cx<'_>, node: &Node, path: &str, tls: bool) -> Option<SaslTermination> {
    let f = Fields::of(cx, node, path, SASL_KEYS)?;
    let mechanisms = f.required(cx, "mechanisms", |cx, node, path| {
        mechanisms(cx, node, path, tls)
    });
    let credentials = f.optional(cx, "credentialsFile", |cx, node, path| {
        read_parsed(cx, node, path, ScramUsers::parse)
    });
    let oauth = f.optional(cx, "oauthBearer", oauth_bearer);
    if (credentials.is_none() && f.has("credentialsFile"))
        || (oauth.is_none() && f.has("oauthBearer"))
    {
        return None;
    }
    let lifetime = f.optional(cx, "sessionLifetime", |cx, node, path| {
        let text = string(cx, node, path)?;
        let d = cx.ok(path, node.mark, crate::types::parse_duration(text))?;
        if d < MIN_SESSION_LIFETIME {
            return cx.fail(
                path,
                node.mark,
                format_args!("must be at least {MIN_SESSION_LIFETIME:?}: clients re-authenticate before it ends"),
            );
        }
        Some(d)
    });
    if lifetime.is_none() && f.has("sessionLifetime") {
        return None;
    }
    let mechanisms = mechanisms?;
    // Each kind of mechanism listed has what it checks against, and
    // nothing is given for one that is not listed.
    let passwords = mechanisms.iter().any(|m| m.uses_password());
    let bearer = mechanisms.contains(&SaslMechanism::OAuthBearer);
    let needs = [
        (
            passwords,
            credentials.is_some(),
            "credentialsFile",
            "PLAIN or SCRAM",
        ),
        (bearer, oauth.is_some(), "oauthBearer", "OAUTHBEARER"),
    ];
    for (listed, given, key, what) in needs {
        let message = match (listed, given) {
            (true, false) => format!("{what} is offered: {key} is required"),
            (false, true) => format!("{what} is not in mechanisms: {key} is never used"),
            _ => continue,
        };
        return cx.fail(&format!("{path}.{key}"), f.mark(), message);
    }
    let (credentials_file, users) = credentials.map_or((None, None), |(f, u)| (Some(f), u));
    Some(SaslTermination {
        mechanisms,
        credentials_file,
        users: Loaded(Arc::new(users)),
        oauth_bearer: oauth,
        session_lifetime: lifetime,
    })
}

/// `sasl.mechanisms`: known ones, none twice, PLAIN only where clients
/// speak TLS (`tls`).
fn mechanisms(cx: &mut Cx<'_>, node: &Node, path: &str, tls: bool) -> Option<Vec<SaslMechanism>> {
    let items = list(cx, node, path)?;
    if items.is_empty() {
        return cx.fail(path, node.mark, "must list at least one mechanism");
    }
    let mut out: Vec<SaslMechanism> = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let at = index(path, i);
        let names = SaslMechanism::ALL.map(SaslMechanism::as_str);
        let Some(word) = one_of(cx, item, &at, &names) else {
            ok = false;
            continue;
        };
        let m = SaslMechanism::ALL
            .into_iter()
            .find(|m| m.as_str() == word)?;
        if out.contains(&m) {
            cx.error(&at, item.mark, format_args!("{m} is listed twice"));
            ok = false;
        } else if m == SaslMechanism::Plain && !tls {
            cx.error(
                &at,
                item.mark,
                "PLAIN sends the password in clear text: it needs gateway.tls (or use SCRAM-SHA-256 or SCRAM-SHA-512)",
            );
            ok = false;
        }
        out.push(m);
    }
    ok.then_some(out)
}

/// `authentication.saslInspection`.
fn inspection(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<SaslInspection> {
    let f = Fields::of(cx, node, path, INSPECTION_KEYS)?;
    let claim = f.optional(cx, "principalClaim", |cx, node, path| {
        let text = string(cx, node, path)?;
        if text.is_empty() {
            return cx.fail(path, node.mark, "must not be empty");
        }
        Some(text.to_owned())
    });
    if claim.is_none() && f.has("principalClaim") {
        return None;
    }
    Some(SaslInspection {
        principal_claim: claim.unwrap_or_else(|| DEFAULT_CLAIM.to_owned()),
    })
}

fn mtls(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<MtlsPrincipals> {
    let f = Fields::of(cx, node, path, MTLS_KEYS)?;
    let rules = f.required(cx, "principals", |cx, node, path| {
        let items = list(cx, node, path)?;
        if items.is_empty() {
            return cx.fail(path, node.mark, "must list at least one rule");
        }
        let rules: Vec<Option<PrincipalRule>> = items
            .iter()
            .enumerate()
            .map(|(i, item)| rule(cx, item, &index(path, i)))
            .collect();
        rules.into_iter().collect()
    })?;
    Some(MtlsPrincipals { rules })
}

fn rule(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<PrincipalRule> {
    let f = Fields::of(cx, node, path, RULE_KEYS)?;
    let from = f.required(cx, "from", |cx, node, path| {
        let names: Vec<&str> = NameSource::ALL.iter().map(|s| s.name()).collect();
        let word = one_of(cx, node, path, &names)?;
        NameSource::ALL.into_iter().find(|s| s.name() == word)
    });
    let pattern = f.optional(cx, "match", |cx, node, path| {
        let text = string(cx, node, path)?;
        if text.is_empty() {
            return cx.fail(
                path,
                node.mark,
                "must not be empty (leave it out to take the whole name)",
            );
        }
        Some((text, node.mark))
    });
    let principal = f.optional(cx, "principal", string);
    let case = f.optional(cx, "case", |cx, node, path| {
        let names: Vec<&str> = Case::ALL.iter().map(|(_, n)| *n).collect();
        let word = one_of(cx, node, path, &names)?;
        Case::ALL
            .into_iter()
            .find(|(_, n)| *n == word)
            .map(|(c, _)| c)
    });
    let bad = (pattern.is_none() && f.has("match"))
        || (principal.is_none() && f.has("principal"))
        || (case.is_none() && f.has("case"));
    let from = from?;
    if bad {
        return None;
    }
    if pattern.is_none() && principal.is_some() {
        return cx.fail(
            &format!("{path}.principal"),
            f.mark(),
            "needs match: without a pattern the principal is the whole name",
        );
    }
    let (pattern, mark) = match pattern {
        Some((p, mark)) => (Some(p), mark),
        None => (None, f.mark()),
    };
    let replacement = principal.unwrap_or("$0");
    let built = PrincipalRule::new(from, pattern, replacement, case.unwrap_or_default());
    cx.ok(&format!("{path}.match"), mark, built)
}

/// One of `known` words, or an error naming them (and the closest).
fn one_of<'n>(cx: &mut Cx<'_>, node: &'n Node, path: &str, known: &[&str]) -> Option<&'n str> {
    let word = string(cx, node, path)?;
    if known.contains(&word) {
        return Some(word);
    }
    let message = match suggest(word, known) {
        Some(close) => format!("unknown value {word:?}, did you mean {close:?}?"),
        None => format!(
            "unknown value {word:?}, expected one of: {}",
            known.join(", ")
        ),
    };
    cx.fail(path, node.mark, message)
}
