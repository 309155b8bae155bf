//! From the YAML tree to [`ProxyConfig`], one section at a time. Every reader
//! records its own errors and the build goes on, so one pass finds them all.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::claims::{Claim, Owner};
use super::model::{
    Admin, DEFAULT_ADMIN_LISTEN, DEFAULT_DRAIN_TIMEOUT, MAX_MAX_BUFFERED_BYTES,
    MIN_MAX_BUFFERED_BYTES, ProxyConfig, ProxyLimits, StartupPolicy,
};
use super::read::{Cx, Fields, integer, string};
use super::tls::{Loaded, admin_tls, read_file};
use super::types::{parse_duration, parse_listen};
use super::yaml::Node;

mod analysis;
mod cluster;
mod gateway;
mod tenancy;
mod token;

pub use token::{MIN_TOKEN_DISTINCT, MIN_TOKEN_LEN, PLACEHOLDER_TOKEN};

const TOP_KEYS: &[&str] = &[
    "admin",
    "drainTimeout",
    "startupPolicy",
    "limits",
    "virtualClusters",
];
const ADMIN_KEYS: &[&str] = &["listen", "tokenFile", "tls"];
const LIMITS_KEYS: &[&str] = &["maxBufferedBytes"];
/// Builds the whole configuration from the document's root.
pub(crate) fn proxy_config(cx: &mut Cx<'_>, root: &Node) -> Option<ProxyConfig> {
    let f = Fields::of(cx, root, "", TOP_KEYS)?;
    let admin = match f.optional(cx, "admin", |cx, node, path| Some(admin(cx, node, path))) {
        Some(admin) => admin,
        None => Some(default_admin(cx)),
    };
    let drain_timeout = f
        .optional(cx, "drainTimeout", duration)
        .unwrap_or(DEFAULT_DRAIN_TIMEOUT);
    let startup_policy = f
        .optional(cx, "startupPolicy", startup_policy)
        .unwrap_or(StartupPolicy::FailFast);
    let limits = match f.optional(cx, "limits", |cx, node, path| Some(limits(cx, node, path))) {
        Some(limits) => limits,
        None => Some(ProxyLimits::default()),
    };
    let virtual_clusters = f.required(cx, "virtualClusters", cluster::virtual_clusters);
    Some(ProxyConfig {
        admin: admin?,
        drain_timeout,
        startup_policy,
        limits: limits?,
        virtual_clusters: virtual_clusters?,
    })
}

/// The proxy-wide `limits`.
fn limits(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<ProxyLimits> {
    let f = Fields::of(cx, node, path, LIMITS_KEYS)?;
    let max_buffered_bytes = f.optional(cx, "maxBufferedBytes", |cx, node, path| {
        // Both bounds fit in an i64.
        let range = (MIN_MAX_BUFFERED_BYTES as i64, MAX_MAX_BUFFERED_BYTES as i64);
        integer(cx, node, path, range.0, range.1).map(|n| n as u64)
    });
    if max_buffered_bytes.is_none() && f.has("maxBufferedBytes") {
        return None;
    }
    Some(ProxyLimits {
        max_buffered_bytes: max_buffered_bytes.unwrap_or(ProxyLimits::default().max_buffered_bytes),
    })
}

fn default_admin(cx: &mut Cx<'_>) -> Admin {
    let listen: SocketAddr = DEFAULT_ADMIN_LISTEN
        .parse()
        .expect("default admin address parses");
    claim_admin(cx, listen, "admin.listen", Default::default());
    Admin {
        listen,
        token_file: None,
        token: None,
        tls: None,
    }
}

fn claim_admin(cx: &mut Cx<'_>, listen: SocketAddr, path: &str, mark: super::yaml::Mark) {
    cx.claims.push(Claim {
        host: listen.ip(),
        first: listen.port(),
        last: listen.port(),
        owner: Owner::Admin,
        path: path.to_owned(),
        mark,
        shared: false,
    });
}

fn admin(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Admin> {
    let f = Fields::of(cx, node, path, ADMIN_KEYS)?;
    let listen = f.optional(cx, "listen", |cx, node, path| {
        let text = string(cx, node, path)?;
        match parse_listen(text) {
            Ok(addr) => {
                claim_admin(cx, addr, path, node.mark);
                Some(addr)
            }
            Err(e) => cx.fail(path, node.mark, e),
        }
    });
    let listen = match listen {
        Some(addr) => addr,
        None if f.has("listen") => return None,
        None => {
            let addr = DEFAULT_ADMIN_LISTEN
                .parse()
                .expect("default admin address parses");
            claim_admin(cx, addr, &format!("{path}.listen"), f.mark());
            addr
        }
    };
    let token = f.optional(cx, "tokenFile", |cx, node, path| {
        let (file, bytes) = read_file(cx, node, path)?;
        let Some(bytes) = bytes else {
            return Some((file, None));
        };
        match token::token(bytes) {
            Ok(token) => Some((file, Some(token))),
            Err(weak) => cx.fail(path, node.mark, token::message(&file.path, weak)),
        }
    });
    let tls = f.optional(cx, "tls", admin_tls);
    if (token.is_none() && f.has("tokenFile")) || (tls.is_none() && f.has("tls")) {
        return None;
    }
    if token.is_none() && !listen.ip().is_loopback() {
        cx.error(
            &format!("{path}.tokenFile"),
            f.mark(),
            format_args!("required when admin.listen ({listen}) is not a loopback address"),
        );
        return None;
    }
    let (token_file, token) = match token {
        Some((file, token)) => (Some(file), token.map(|t| Loaded(Arc::new(t)))),
        None => (None, None),
    };
    Some(Admin {
        listen,
        token_file,
        token,
        tls,
    })
}

pub(super) fn duration(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Duration> {
    let text = string(cx, node, path)?;
    cx.ok(path, node.mark, parse_duration(text))
}

fn startup_policy(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<StartupPolicy> {
    match string(cx, node, path)? {
        "fail-fast" => Some(StartupPolicy::FailFast),
        "best-effort" => Some(StartupPolicy::BestEffort),
        other => cx.fail(
            path,
            node.mark,
            format_args!("{other:?} is not a startup policy, expected fail-fast or best-effort"),
        ),
    }
}
