//! What a reload from one configuration to another would do, per virtual
//! cluster. A cluster counts as unchanged only when everything about it is the
//! same, including the content of the files it refers to, so a rotated
//! certificate is a modification even when its path is not.

use sluice_admin_api::{Changes, ModifiedCluster};

use super::files::FileRef;
use super::model::{BrokerPorts, ProxyConfig, Routing, Upstream, VirtualCluster};
use super::tls::GatewayTls;
use super::types::format_duration;

/// Compares two configurations.
pub fn diff(old: &ProxyConfig, new: &ProxyConfig) -> Changes {
    let mut d = Changes::default();
    for cluster in &new.virtual_clusters {
        let name = cluster.name.to_string();
        match old.cluster(cluster.name.as_str()) {
            None => d.added.push(name),
            Some(before) => {
                let reasons = cluster_reasons(before, cluster);
                if reasons.0.is_empty() {
                    d.unchanged.push(name);
                } else if reasons.1 {
                    d.modified.push(ModifiedCluster {
                        name,
                        reasons: reasons.0,
                    });
                } else {
                    d.rotated.push(ModifiedCluster {
                        name,
                        reasons: reasons.0,
                    });
                }
            }
        }
    }
    for cluster in &old.virtual_clusters {
        if new.cluster(cluster.name.as_str()).is_none() {
            d.removed.push(cluster.name.to_string());
        }
    }
    d.global = global_reasons(old, new);
    d
}

fn global_reasons(old: &ProxyConfig, new: &ProxyConfig) -> Vec<String> {
    let mut r = Reasons::default();
    r.value("admin.listen", &old.admin.listen, &new.admin.listen);
    r.file(
        "admin.tokenFile",
        old.admin.token_file.as_ref(),
        new.admin.token_file.as_ref(),
    );
    let (old_tls, new_tls) = (old.admin.tls.as_ref(), new.admin.tls.as_ref());
    r.file(
        "admin.tls.certFile",
        old_tls.map(|t| &t.cert_file),
        new_tls.map(|t| &t.cert_file),
    );
    r.file(
        "admin.tls.keyFile",
        old_tls.map(|t| &t.key_file),
        new_tls.map(|t| &t.key_file),
    );
    r.value(
        "drainTimeout",
        &format_duration(old.drain_timeout),
        &format_duration(new.drain_timeout),
    );
    r.value(
        "startupPolicy",
        old.startup_policy.as_str(),
        new.startup_policy.as_str(),
    );
    r.value(
        "limits.maxBufferedBytes",
        &old.limits.max_buffered_bytes,
        &new.limits.max_buffered_bytes,
    );
    r.0
}

/// Why a cluster differs, and whether anything but what applies in place
/// (TLS material, credentials, limits, filters) does.
fn cluster_reasons(old: &VirtualCluster, new: &VirtualCluster) -> (Vec<String>, bool) {
    let mut r = Reasons::default();
    // upstream.checkTimeout and checkOnReload are left out on purpose: they
    // steer the next reload's upstream check, not the running data plane.
    // So is `analysis` (its caFile included): it judges the next change.
    let (ou, nu) = (&old.upstream, &new.upstream);
    if ou.bootstrap_servers != nu.bootstrap_servers {
        r.changed("upstream.bootstrapServers");
    }
    match (&ou.tls, &nu.tls) {
        (None, None) => {}
        (None, Some(_)) => r.push("upstream.tls added"),
        (Some(_), None) => r.push("upstream.tls removed"),
        (Some(a), Some(b)) => {
            r.file(
                "upstream.tls.caFile",
                a.ca_file.as_ref(),
                b.ca_file.as_ref(),
            );
            r.value(
                "upstream.tls.serverName",
                &a.server_name.as_deref().unwrap_or("(none)"),
                &b.server_name.as_deref().unwrap_or("(none)"),
            );
            r.file(
                "upstream.tls.certFile",
                a.cert_file.as_ref(),
                b.cert_file.as_ref(),
            );
            r.file(
                "upstream.tls.keyFile",
                a.key_file.as_ref(),
                b.key_file.as_ref(),
            );
        }
    }
    sasl_reasons(&mut r, ou, nu);
    let (og, ng) = (&old.gateway, &new.gateway);
    r.value("gateway.listenHost", &og.listen_host, &ng.listen_host);
    routing_reasons(&mut r, &og.routing, &ng.routing);
    gateway_tls_reasons(&mut r, og.tls.as_ref(), ng.tls.as_ref());
    // A connection keeps the namespace it started in: a new prefix is a new
    // generation, the old one's connections drain.
    let prefix = |c: &VirtualCluster| {
        (c.tenancy.as_ref()).map_or_else(|| "(none)".to_owned(), |t| format!("{:?}", t.prefix))
    };
    r.value("tenancy.prefix", &prefix(old), &prefix(new));
    r.in_place(
        "limits.maxConnections",
        &old.limits.max_connections,
        &new.limits.max_connections,
    );
    r.in_place(
        "limits.maxFrameBytes",
        &old.limits.max_frame_bytes,
        &new.limits.max_frame_bytes,
    );
    r.in_place(
        "limits.frameTimeout",
        &format_duration(old.limits.frame_timeout),
        &format_duration(new.limits.frame_timeout),
    );
    // Who clients are is decided at each handshake: new rules apply to the
    // next one, in place like the TLS material they read.
    if old.authentication != new.authentication {
        r.0.push("authentication changed".to_owned());
    }
    // The filter chain is swapped in place too: requests take the new one
    // from the next on.
    if old.filters != new.filters {
        r.0.push("filters changed".to_owned());
    }
    (r.0, r.1)
}

/// The gateway's TLS: new material rotates in place, anything more is a
/// new generation.
fn gateway_tls_reasons(r: &mut Reasons, old: Option<&GatewayTls>, new: Option<&GatewayTls>) {
    match (old, new) {
        (None, None) => {}
        (None, Some(_)) => r.push("gateway.tls added"),
        (Some(_), None) => r.push("gateway.tls removed"),
        (Some(a), Some(b)) => {
            r.file(
                "gateway.tls.certFile",
                Some(&a.cert_file),
                Some(&b.cert_file),
            );
            r.file("gateway.tls.keyFile", Some(&a.key_file), Some(&b.key_file));
            r.file(
                "gateway.tls.clientCaFile",
                a.client_ca_file.as_ref(),
                b.client_ca_file.as_ref(),
            );
        }
    }
}

/// The proxy's own credentials and static brokers. New contents of the
/// credential files (or new paths) rotate in place like TLS material; the
/// reasons name the files, never what they hold.
fn sasl_reasons(r: &mut Reasons, old: &Upstream, new: &Upstream) {
    match (&old.sasl, &new.sasl) {
        (None, None) => {}
        (None, Some(_)) => r.push("upstream.sasl added"),
        (Some(_), None) => r.push("upstream.sasl removed"),
        (Some(a), Some(b)) => {
            r.value("upstream.sasl.mechanism", &a.mechanism, &b.mechanism);
            r.file(
                "upstream.sasl.usernameFile",
                Some(&a.username_file),
                Some(&b.username_file),
            );
            r.file(
                "upstream.sasl.passwordFile",
                Some(&a.password_file),
                Some(&b.password_file),
            );
        }
    }
    if old.nodes != new.nodes {
        r.changed("upstream.nodes");
    }
}

/// How clients reach the cluster: port per broker or SNI, and their settings.
fn routing_reasons(r: &mut Reasons, old: &Routing, new: &Routing) {
    match (old, new) {
        (Routing::Ports(o), Routing::Ports(n)) => {
            r.value(
                "gateway.advertisedHost",
                &o.advertised_host,
                &n.advertised_host,
            );
            r.value(
                "gateway.bootstrapPort",
                &o.bootstrap_port,
                &n.bootstrap_port,
            );
            let ports = |b: &BrokerPorts| format!("{}-{}", b.start, b.last_port());
            r.value(
                "gateway.brokerPorts",
                &ports(&o.broker_ports),
                &ports(&n.broker_ports),
            );
            r.value(
                "gateway.brokerPorts.firstNodeId",
                &o.broker_ports.first_node_id,
                &n.broker_ports.first_node_id,
            );
        }
        (Routing::Sni(o), Routing::Sni(n)) => {
            r.value("gateway.sni.port", &o.port, &n.port);
            r.value(
                "gateway.sni.bootstrapHost",
                &o.bootstrap_host,
                &n.bootstrap_host,
            );
            r.value(
                "gateway.sni.brokerHostPattern",
                &o.broker_host_pattern,
                &n.broker_host_pattern,
            );
        }
        (Routing::Ports(_), Routing::Sni(_)) => {
            r.push("gateway.sni added (port per broker removed)")
        }
        (Routing::Sni(_), Routing::Ports(_)) => {
            r.push("gateway.sni removed (port per broker added)")
        }
    }
}

/// Collects human-readable reasons in a fixed order, and whether any is
/// more than a file's new path or content (every file compared here is TLS
/// material, the proxy's SASL credentials, or the admin token).
#[derive(Default)]
struct Reasons(Vec<String>, bool);

impl Reasons {
    fn push(&mut self, reason: &str) {
        self.0.push(reason.to_owned());
        self.1 = true;
    }

    fn changed(&mut self, what: &str) {
        self.push(&format!("{what} changed"));
    }

    fn value<T: PartialEq + std::fmt::Display + ?Sized>(&mut self, what: &str, old: &T, new: &T) {
        if old != new {
            self.push(&format!("{what} changed from {old} to {new}"));
        }
    }

    /// A value the running generation takes in place (the limits).
    fn in_place<T: PartialEq + std::fmt::Display + ?Sized>(
        &mut self,
        what: &str,
        old: &T,
        new: &T,
    ) {
        if old != new {
            self.0.push(format!("{what} changed from {old} to {new}"));
        }
    }

    fn file(&mut self, what: &str, old: Option<&FileRef>, new: Option<&FileRef>) {
        match (old, new) {
            (None, None) => {}
            (None, Some(_)) => self.push(&format!("{what} added")),
            (Some(_), None) => self.push(&format!("{what} removed")),
            (Some(a), Some(b)) if a.path != b.path => self.0.push(format!("{what} changed")),
            (Some(a), Some(b)) if a.digest != b.digest => {
                self.0.push(format!("{what} content changed"));
            }
            _ => {}
        }
    }
}
