//! The `virtualClusters` section: names, upstream, gateway, ports, limits
//! and filters of each cluster.

use std::collections::HashMap;

use super::super::model::{
    AnalysisSettings, DEFAULT_CHECK_TIMEOUT, Limits, Upstream, VirtualCluster,
};
use super::super::read::{Cx, Fields, boolean, index, integer, list, string, suggest};
use super::super::sasl::{upstream_nodes, upstream_sasl};
use super::super::tls::upstream_tls;
use super::super::types::{ClusterName, HostPort};
use super::super::yaml::{Mark, Node, Value};
use super::analysis::analysis;
use super::duration;
use super::gateway::gateway;
use super::tenancy::{check_overlaps, tenancy};
use crate::filter;
use crate::identity::{GatewayTls, authentication};

const CLUSTER_KEYS: &[&str] = &[
    "name",
    "upstream",
    "gateway",
    "limits",
    "filters",
    "analysis",
    "authentication",
    "tenancy",
];
const UPSTREAM_KEYS: &[&str] = &[
    "bootstrapServers",
    "tls",
    "checkTimeout",
    "checkOnReload",
    "sasl",
    "nodes",
];
const LIMITS_KEYS: &[&str] = &["maxConnections", "maxFrameBytes", "frameTimeout"];

pub(super) fn virtual_clusters(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
) -> Option<Vec<VirtualCluster>> {
    let items = list(cx, node, path)?;
    if items.is_empty() {
        return cx.fail(path, node.mark, "must list at least one virtual cluster");
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut clusters = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let path = index(path, i);
        // Duplicate names are checked on the raw text so a typo in one
        // cluster does not hide a clash in another.
        if let Some((name, mark)) = raw_name(item) {
            if let Some(first) = seen.get(name) {
                cx.error(
                    &format!("{path}.name"),
                    mark,
                    format_args!("name {name:?} is already used by virtualClusters[{first}]"),
                );
                ok = false;
            } else {
                seen.insert(name, i);
            }
        }
        match virtual_cluster(cx, item, &path, i) {
            Some(c) => clusters.push(c),
            None => ok = false,
        }
    }
    ok &= check_overlaps(cx, path, &clusters);
    ok.then(|| clusters.into_iter().map(|(c, _)| c).collect())
}

fn raw_name(item: &Node) -> Option<(&str, super::super::yaml::Mark)> {
    let Value::Map(entries) = &item.value else {
        return None;
    };
    let entry = entries.iter().find(|e| e.key == "name")?;
    match &entry.value.value {
        Value::Scalar { text, .. } => Some((text, entry.value.mark)),
        _ => None,
    }
}

/// A cluster, and where its `tenancy` is (for the overlap check).
fn virtual_cluster(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
    i: usize,
) -> Option<(VirtualCluster, Option<Mark>)> {
    let f = Fields::of(cx, node, path, CLUSTER_KEYS)?;
    let name = f.required(cx, "name", |cx, node, path| {
        let text = string(cx, node, path)?;
        cx.ok(path, node.mark, text.parse::<ClusterName>())
    });
    let owner_name = raw_name(node).map(|(n, _)| n.to_owned());
    let upstream = f.required(cx, "upstream", upstream);
    let gateway = f.required(cx, "gateway", |cx, node, path| {
        gateway(cx, node, path, i, &owner_name)
    });
    let limits = match f.optional(cx, "limits", |cx, node, path| Some(limits(cx, node, path))) {
        Some(limits) => limits,
        None => Some(Limits::default()),
    };
    let filters = match f.optional(cx, "filters", |cx, node, path| {
        Some(filters(cx, node, path))
    }) {
        Some(filters) => filters,
        None => Some(Vec::new()),
    };
    let analysis = match f.optional(cx, "analysis", |cx, node, path| {
        Some(analysis(cx, node, path))
    }) {
        Some(analysis) => analysis,
        None => Some(AnalysisSettings::default()),
    };
    let tls = gateway.as_ref().and_then(|g| g.tls.as_ref());
    let gateway_tls = GatewayTls {
        tls: tls.is_some(),
        client_ca: tls.is_some_and(|t| t.client_ca_file.is_some()),
    };
    let authentication = f.optional(cx, "authentication", |cx, node, path| {
        authentication(cx, node, path, gateway_tls)
    });
    if authentication.is_none() && f.has("authentication") {
        return None;
    }
    let mut tenancy_at = None;
    let tenancy = f.optional(cx, "tenancy", |cx, node, path| {
        tenancy_at = Some(node.mark);
        tenancy(cx, node, path, owner_name.as_deref())
    });
    if tenancy.is_none() && f.has("tenancy") {
        return None;
    }
    let cluster = VirtualCluster {
        name: name?,
        upstream: upstream?,
        gateway: gateway?,
        limits: limits?,
        filters: filters?,
        analysis: analysis?,
        authentication,
        tenancy,
    };
    Some((cluster, tenancy_at))
}

fn upstream(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Upstream> {
    let f = Fields::of(cx, node, path, UPSTREAM_KEYS)?;
    let servers = f.required(cx, "bootstrapServers", |cx, node, path| {
        let items = list(cx, node, path)?;
        if items.is_empty() {
            return cx.fail(path, node.mark, "must list at least one server");
        }
        let parsed: Vec<Option<HostPort>> = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let path = index(path, i);
                let text = string(cx, item, &path)?;
                cx.ok(&path, item.mark, text.parse::<HostPort>())
            })
            .collect();
        parsed.into_iter().collect()
    });
    let tls = match f.optional(cx, "tls", |cx, node, path| {
        Some(upstream_tls(cx, node, path))
    }) {
        Some(tls) => Some(tls?),
        None => None,
    };
    let check_timeout = f.optional(cx, "checkTimeout", |cx, node, path| {
        let d = duration(cx, node, path)?;
        if d.is_zero() {
            return cx.fail(path, node.mark, "must be longer than 0s");
        }
        Some(d)
    });
    let check_on_reload = f.optional(cx, "checkOnReload", boolean);
    let has_tls = f.has("tls");
    let sasl = f.optional(cx, "sasl", |cx, node, path| {
        upstream_sasl(cx, node, path, has_tls)
    });
    let nodes = f.optional(cx, "nodes", upstream_nodes);
    if (check_timeout.is_none() && f.has("checkTimeout"))
        || (check_on_reload.is_none() && f.has("checkOnReload"))
        || (sasl.is_none() && f.has("sasl"))
        || (nodes.is_none() && f.has("nodes"))
    {
        return None;
    }
    Some(Upstream {
        bootstrap_servers: servers?,
        tls,
        check_timeout: check_timeout.unwrap_or(DEFAULT_CHECK_TIMEOUT),
        check_on_reload: check_on_reload.unwrap_or(true),
        sasl,
        nodes: nodes.unwrap_or_default(),
    })
}

fn limits(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Limits> {
    let f = Fields::of(cx, node, path, LIMITS_KEYS)?;
    let defaults = Limits::default();
    let max_connections = f.optional(cx, "maxConnections", |cx, node, path| {
        integer(cx, node, path, 1, 1_000_000).map(|n| n as u32)
    });
    let max_frame_bytes = f.optional(cx, "maxFrameBytes", |cx, node, path| {
        integer(cx, node, path, 1024, i64::from(i32::MAX)).map(|n| n as u32)
    });
    let frame_timeout = f.optional(cx, "frameTimeout", |cx, node, path| {
        let d = duration(cx, node, path)?;
        if d.is_zero() {
            return cx.fail(path, node.mark, "must be longer than 0s");
        }
        Some(d)
    });
    let bad = (max_connections.is_none() && f.has("maxConnections"))
        || (max_frame_bytes.is_none() && f.has("maxFrameBytes"))
        || (frame_timeout.is_none() && f.has("frameTimeout"));
    (!bad).then(|| Limits {
        max_connections: max_connections.unwrap_or(defaults.max_connections),
        max_frame_bytes: max_frame_bytes.unwrap_or(defaults.max_frame_bytes),
        frame_timeout: frame_timeout.unwrap_or(defaults.frame_timeout),
    })
}

fn filters(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Vec<filter::FilterSpec>> {
    let items = list(cx, node, path)?;
    let built: Vec<Option<filter::FilterSpec>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| filter_spec(cx, item, &index(path, i)))
        .collect();
    let built: Option<Vec<filter::FilterSpec>> = built.into_iter().collect();
    let built = built?;
    let mut ok = true;
    for (i, (spec, item)) in built.iter().zip(items).enumerate() {
        let kind = filter::kind(spec.kind()).filter(|k| k.single());
        if let Some(kind) = kind
            && built[..i].iter().any(|s| s.kind() == kind.name())
        {
            let message = format!("at most one {} filter per cluster", kind.name());
            cx.error(&index(path, i), item.mark, message);
            ok = false;
        }
    }
    ok.then_some(built)
}

fn filter_spec(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<filter::FilterSpec> {
    let f = Fields::of(cx, node, path, &["type", "config"])?;
    let kind = f.required(cx, "type", |cx, node, path| {
        let name = string(cx, node, path)?;
        match filter::kind(name) {
            Some(kind) => Some(kind),
            None => {
                let known = filter::names();
                let message = match suggest(name, &known) {
                    Some(close) => format!("unknown filter type {name:?}, did you mean {close:?}?"),
                    None => format!(
                        "unknown filter type {name:?}, known types: {}",
                        known.join(", ")
                    ),
                };
                cx.fail(path, node.mark, message)
            }
        }
    })?;
    let config = node_field(node, "config");
    let config_path = format!("{path}.config");
    kind.build(cx, config, &config_path, f.mark())
}

fn node_field<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|e| e.key == key)
            .map(|e| &e.value)
            .filter(|n| n.value != Value::Null),
        _ => None,
    }
}
