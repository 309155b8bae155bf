//! The proxy's own way past an upstream that requires SASL: credentials
//! (`upstream.sasl`) for the connections the proxy makes by itself (its
//! broker lookup and a reload's upstream check), or a static list of the
//! brokers (`upstream.nodes`) so that it makes no lookup at all. Clients'
//! own SASL exchanges pass through the proxy untouched either way.
//!
//! The username and password are read from files, like TLS keys: their
//! contents are part of the effective version and rotate by reload, and
//! they never appear in an error, a warning, a diff or a `Debug` output.

use std::collections::HashMap;
use std::sync::Arc;

use super::files::FileRef;
use super::model::StaticNode;
pub use super::model::sasl::{Credentials, SaslMechanism, UpstreamSasl};
use super::read::{Cx, Fields, index, integer, list, string, suggest};
use super::tls::{Loaded, read_file};
use super::types::HostPort;
use super::yaml::Node;

const SASL_KEYS: &[&str] = &["mechanism", "usernameFile", "passwordFile"];
const NODE_KEYS: &[&str] = &["id", "address"];

/// Reads `upstream.sasl`; `tls` tells whether `upstream.tls` is set: PLAIN
/// sends the password as it is, so it is refused without TLS (whoever may
/// edit the configuration could otherwise have the password sent in clear
/// to any address, by the reload's own upstream check).
pub(crate) fn upstream_sasl(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
    tls: bool,
) -> Option<UpstreamSasl> {
    let f = Fields::of(cx, node, path, SASL_KEYS)?;
    let mechanism = f.required(cx, "mechanism", |cx, node, path| {
        let m = mechanism(cx, node, path)?;
        if m == SaslMechanism::Plain && !tls {
            return cx.fail(
                path,
                node.mark,
                "PLAIN sends the password in clear text: it needs upstream.tls (or use SCRAM-SHA-256 or SCRAM-SHA-512)",
            );
        }
        Some(m)
    });
    let username = f.required(cx, "usernameFile", |cx, node, path| {
        secret(cx, node, path, "username")
    });
    let password = f.required(cx, "passwordFile", |cx, node, path| {
        secret(cx, node, path, "password")
    });
    let (username_file, username) = username?;
    let (password_file, password) = password?;
    let credentials = match (username, password) {
        (Some(username), Some(password)) => Some(Credentials { username, password }),
        _ => None,
    };
    Some(UpstreamSasl {
        mechanism: mechanism?,
        username_file,
        password_file,
        credentials: Loaded(Arc::new(credentials)),
    })
}

fn mechanism(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<SaslMechanism> {
    let name = string(cx, node, path)?;
    if let Some(m) = SaslMechanism::PASSWORDS.iter().find(|m| m.as_str() == name) {
        return Some(*m);
    }
    let known = SaslMechanism::PASSWORDS.map(SaslMechanism::as_str);
    let message = match suggest(name, &known) {
        Some(close) => {
            format!("{name:?} is not a SASL mechanism the proxy supports, did you mean {close:?}?")
        }
        None => format!(
            "{name:?} is not a SASL mechanism the proxy supports, expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
        ),
    };
    cx.fail(path, node.mark, message)
}

/// A file holding one secret line: its reference, and the line (without
/// its line ending) when files are read. Errors never quote the content.
fn secret(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
    what: &str,
) -> Option<(FileRef, Option<String>)> {
    let (file, bytes) = read_file(cx, node, path)?;
    let Some(bytes) = bytes else {
        return Some((file, None));
    };
    let line = String::from_utf8(bytes).ok().map(|mut text| {
        let trimmed = text.trim_end_matches(['\n', '\r']).len();
        text.truncate(trimmed);
        text
    });
    match line {
        Some(line) if !line.is_empty() && !line.contains(['\n', '\r', '\0']) => {
            Some((file, Some(line)))
        }
        _ => cx.fail(
            path,
            node.mark,
            format_args!(
                "{:?} must hold the {what} on one line of UTF-8 text",
                file.path
            ),
        ),
    }
}

/// Reads `upstream.nodes`: each broker's node id and address, ids unique.
pub(crate) fn upstream_nodes(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Vec<StaticNode>> {
    let items = list(cx, node, path)?;
    if items.is_empty() {
        return cx.fail(path, node.mark, "must list at least one node");
    }
    let mut seen: HashMap<i32, usize> = HashMap::new();
    let mut nodes = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let path = index(path, i);
        let Some(f) = Fields::of(cx, item, &path, NODE_KEYS) else {
            ok = false;
            continue;
        };
        let id = f.required(cx, "id", |cx, node, path| {
            let id = integer(cx, node, path, 0, i64::from(i32::MAX))? as i32;
            if let Some(first) = seen.get(&id) {
                return cx.fail(
                    path,
                    node.mark,
                    format_args!("node id {id} is already listed at nodes[{first}]"),
                );
            }
            seen.insert(id, i);
            Some(id)
        });
        let address = f.required(cx, "address", |cx, node, path| {
            let text = string(cx, node, path)?;
            cx.ok(path, node.mark, text.parse::<HostPort>())
        });
        match (id, address) {
            (Some(id), Some(address)) => nodes.push(StaticNode { id, address }),
            _ => ok = false,
        }
    }
    ok.then_some(nodes)
}
