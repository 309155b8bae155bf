//! A cluster's `gateway`: where it listens, port per broker or SNI routing
//! (one or the other, never both), and TLS for clients.

use std::net::IpAddr;

use super::super::claims::{Claim, Owner, SniClaim};
use super::super::model::{BrokerPorts, Gateway, PortRouting, Routing, SniRouting};
use super::super::read::{Cx, Fields, integer, join, string};
use super::super::tls::gateway_tls;
use super::super::types::{Host, HostPattern, Port, SniHost, parse_ip};
use super::super::yaml::{Mark, Node, Value};

const GATEWAY_KEYS: &[&str] = &[
    "listenHost",
    "advertisedHost",
    "bootstrapPort",
    "brokerPorts",
    "sni",
    "tls",
];
/// The port-per-broker keys, which `sni` replaces.
const PORT_KEYS: &[&str] = &["advertisedHost", "bootstrapPort", "brokerPorts"];
const SNI_KEYS: &[&str] = &["port", "bootstrapHost", "brokerHostPattern"];
const BROKER_PORTS_KEYS: &[&str] = &["start", "count", "firstNodeId"];

/// Where one cluster's gateway is: what every routing reader needs.
struct At<'a> {
    node: &'a Node,
    path: &'a str,
    index: usize,
    name: &'a Option<String>,
    listen_host: Option<IpAddr>,
}

impl At<'_> {
    fn owner(&self, field: &'static str) -> Owner {
        Owner::Cluster {
            index: self.index,
            name: self.name.clone(),
            field,
        }
    }
}

pub(super) fn gateway(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
    i: usize,
    name: &Option<String>,
) -> Option<Gateway> {
    let f = Fields::of(cx, node, path, GATEWAY_KEYS)?;
    let listen_host = match f.optional(cx, "listenHost", |cx, node, path| {
        let text = string(cx, node, path)?;
        Some(cx.ok(path, node.mark, parse_ip(text)))
    }) {
        Some(host) => host,
        None => Some(std::net::Ipv4Addr::UNSPECIFIED.into()),
    };
    let at = At {
        node,
        path,
        index: i,
        name,
        listen_host,
    };
    let routing = if f.has("sni") {
        sni_routing(cx, &f, &at)
    } else {
        port_routing(cx, &f, &at)
    };
    let tls = match f.optional(cx, "tls", |cx, node, path| {
        Some(gateway_tls(cx, node, path))
    }) {
        Some(tls) => Some(tls?),
        None => None,
    };
    Some(Gateway {
        listen_host: listen_host?,
        routing: routing?,
        tls,
    })
}

/// Routing by server name: `sni` alone (none of the port keys), with
/// `tls`; its shared port is claimed whenever it is valid, so conflicts are
/// reported even if something else in the cluster is not.
fn sni_routing(cx: &mut Cx<'_>, f: &Fields<'_>, at: &At<'_>) -> Option<Routing> {
    let (node, path) = (at.node, at.path);
    let mut alone = true;
    for key in PORT_KEYS.iter().filter(|k| f.has(k)) {
        cx.error(
            &join(path, key),
            key_mark(node, key),
            "not allowed with gateway.sni: the server names in sni name the bootstrap and every broker",
        );
        alone = false;
    }
    if !f.has("tls") {
        cx.error(
            &join(path, "tls"),
            f.mark(),
            "required with gateway.sni: the shared port routes by the TLS server name",
        );
        alone = false;
    }
    let sni = f.required(cx, "sni", |cx, node, path| {
        sni(cx, node, path, at.listen_host, (at.index, at.name))
    });
    if let (Some(sni), Some(host)) = (&sni, at.listen_host) {
        cx.claims.push(Claim {
            host,
            first: sni.port.get(),
            last: sni.port.get(),
            owner: at.owner("sni.port"),
            path: format!("{path}.sni.port"),
            mark: field_mark(field_node(node, "sni"), "port"),
            shared: true,
        });
    }
    sni.filter(|_| alone).map(Routing::Sni)
}

/// Routing by port per broker: the advertised host, the bootstrap port and
/// the broker ports, each claimed whenever it is valid.
fn port_routing(cx: &mut Cx<'_>, f: &Fields<'_>, at: &At<'_>) -> Option<Routing> {
    let (node, path) = (at.node, at.path);
    let advertised_host = f.required(cx, "advertisedHost", |cx, node, path| {
        let text = string(cx, node, path)?;
        cx.ok(path, node.mark, text.parse::<Host>())
    });
    let bootstrap_port = f.required(cx, "bootstrapPort", port);
    let broker_ports = f.required(cx, "brokerPorts", broker_ports);
    if let (Some(p), Some(host)) = (bootstrap_port, at.listen_host) {
        cx.claims.push(Claim {
            host,
            first: p.get(),
            last: p.get(),
            owner: at.owner("bootstrapPort"),
            path: format!("{path}.bootstrapPort"),
            mark: field_mark(node, "bootstrapPort"),
            shared: false,
        });
    }
    if let (Some(b), Some(host)) = (broker_ports, at.listen_host) {
        cx.claims.push(Claim {
            host,
            first: b.start.get(),
            last: b.last_port(),
            owner: at.owner("brokerPorts"),
            path: format!("{path}.brokerPorts"),
            mark: field_mark(node, "brokerPorts"),
            shared: false,
        });
    }
    Some(Routing::Ports(PortRouting {
        advertised_host: advertised_host?,
        bootstrap_port: bootstrap_port?,
        broker_ports: broker_ports?,
    }))
}

/// `gateway.sni`; its names are recorded for the checks across clusters
/// on the same port (each name that is valid, even when the other is not).
fn sni(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
    listen_host: Option<IpAddr>,
    (index, name): (usize, &Option<String>),
) -> Option<SniRouting> {
    let f = Fields::of(cx, node, path, SNI_KEYS)?;
    let port = f.required(cx, "port", port);
    let bootstrap_host = f.required(cx, "bootstrapHost", |cx, node, path| {
        let text = string(cx, node, path)?;
        let host = cx.ok(path, node.mark, text.parse::<SniHost>())?;
        Some((host, path.to_owned(), node.mark))
    });
    let pattern = f.required(cx, "brokerHostPattern", |cx, node, path| {
        let text = string(cx, node, path)?;
        let pattern = cx.ok(path, node.mark, text.parse::<HostPattern>())?;
        Some((pattern, path.to_owned(), node.mark))
    });
    if let (Some(port), Some(host)) = (port, listen_host) {
        cx.sni.push(SniClaim {
            host,
            port: port.get(),
            index,
            name: name.clone(),
            bootstrap: bootstrap_host.clone(),
            pattern: pattern.clone(),
        });
    }
    Some(SniRouting {
        port: port?,
        bootstrap_host: bootstrap_host?.0,
        broker_host_pattern: pattern?.0,
    })
}

/// Where a field's value starts (the mapping's own mark if it is absent).
fn field_mark(node: &Node, key: &str) -> Mark {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|e| e.key == key)
            .map_or(node.mark, |e| e.value.mark),
        _ => node.mark,
    }
}

/// Where a field's key stands (the mapping's own mark if it is absent).
fn key_mark(node: &Node, key: &str) -> Mark {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|e| e.key == key)
            .map_or(node.mark, |e| e.key_mark),
        _ => node.mark,
    }
}

/// A field's value node (the mapping itself if it is absent).
fn field_node<'n>(node: &'n Node, key: &str) -> &'n Node {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|e| e.key == key)
            .map_or(node, |e| &e.value),
        _ => node,
    }
}

fn port(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Port> {
    let n = integer(cx, node, path, i64::MIN, i64::MAX)?;
    cx.ok(path, node.mark, Port::new(n))
}

fn broker_ports(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<BrokerPorts> {
    let f = Fields::of(cx, node, path, BROKER_PORTS_KEYS)?;
    let start = f.required(cx, "start", port);
    let count = f.required(cx, "count", |cx, node, path| {
        integer(cx, node, path, 1, 65535).map(|n| n as u16)
    });
    let first_node_id = f
        .optional(cx, "firstNodeId", |cx, node, path| {
            integer(cx, node, path, 0, i64::from(i32::MAX)).map(|n| n as i32)
        })
        .unwrap_or(0);
    let (start, count) = (start?, count?);
    let last = u32::from(start.get()) + u32::from(count) - 1;
    if last > 65535 {
        return cx.fail(
            path,
            f.mark(),
            format_args!("ports {start}-{last} extend past 65535"),
        );
    }
    let last_node = i64::from(first_node_id) + i64::from(count) - 1;
    if last_node > i64::from(i32::MAX) {
        return cx.fail(
            path,
            f.mark(),
            format_args!(
                "node ids {first_node_id}-{last_node} extend past {} (the largest Kafka node id)",
                i32::MAX
            ),
        );
    }
    Some(BrokerPorts {
        start,
        count,
        first_node_id,
    })
}
