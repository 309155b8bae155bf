//! `virtualClusters[].authentication`, read with every error at its
//! position.

use super::{Authentication, Case, MtlsPrincipals, NameSource, PrincipalRule};
use crate::read::{Cx, Fields, boolean, index, list, string, suggest};
use crate::yaml::Node;

const AUTHENTICATION_KEYS: &[&str] = &["mtls", "required"];
const MTLS_KEYS: &[&str] = &["principals"];
const RULE_KEYS: &[&str] = &["from", "match", "principal", "case"];

/// Reads an `authentication` block; `client_ca` says whether the cluster's
/// gateway verifies client certificates (`gateway.tls.clientCaFile`), which
/// `mtls` needs.
pub(crate) fn authentication(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
    client_ca: bool,
) -> Option<Authentication> {
    let f = Fields::of(cx, node, path, AUTHENTICATION_KEYS)?;
    let mtls = f.optional(cx, "mtls", |cx, node, path| {
        if !client_ca {
            return cx.fail(
                path,
                node.mark,
                "needs gateway.tls.clientCaFile: without it no client certificate is verified",
            );
        }
        mtls(cx, node, path)
    });
    let required = f.optional(cx, "required", boolean);
    if (mtls.is_none() && f.has("mtls")) || (required.is_none() && f.has("required")) {
        return None;
    }
    if mtls.is_none() {
        return cx.fail(
            path,
            f.mark(),
            "names no source of principals: add mtls (or leave authentication out)",
        );
    }
    Some(Authentication {
        mtls,
        required: required.unwrap_or(false),
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
