//! SNI routing's rules across clusters: on one shared port every server
//! name leads to exactly one cluster and node (bootstrap names unique, no
//! bootstrap name among another's broker names, no two broker patterns
//! that could make the same name), and [`warnings`] when a gateway
//! certificate does not cover the names clients will verify.

use std::collections::HashMap;
use std::net::IpAddr;

use rustls::client::verify_server_name;
use rustls::server::ParsedCertificate;
use rustls_pki_types::ServerName;

use super::claims::SniClaim;
use super::model::{ProxyConfig, VirtualCluster};
use super::read::Cx;
use super::types::HostPattern;

impl SniClaim {
    fn describe_for(&self, by: &SniClaim) -> String {
        match &self.name {
            _ if self.index == by.index => "this cluster".to_owned(),
            Some(name) => format!("virtual cluster {name:?}"),
            None => format!("virtualClusters[{}]", self.index),
        }
    }
}

/// Whether two patterns could make the same name. Any name both make
/// starts with both prefixes and ends with both suffixes, so unrelated
/// prefixes or suffixes rule it out; related ones are refused, which is
/// stricter than needed but simple to explain.
fn overlap(a: &HostPattern, b: &HostPattern) -> bool {
    let prefixes = a.prefix().starts_with(b.prefix()) || b.prefix().starts_with(a.prefix());
    let suffixes = a.suffix().ends_with(b.suffix()) || b.suffix().ends_with(a.suffix());
    prefixes && suffixes
}

/// Reports every name that clashes with one claimed before it on the same
/// host and port.
pub(crate) fn check(cx: &mut Cx<'_>) {
    let claims = std::mem::take(&mut cx.sni);
    let mut by_port: HashMap<(IpAddr, u16), Vec<usize>> = HashMap::new();
    for (i, claim) in claims.iter().enumerate() {
        by_port.entry((claim.host, claim.port)).or_default().push(i);
    }
    for (i, claim) in claims.iter().enumerate() {
        let group = &by_port[&(claim.host, claim.port)];
        let earlier = group.iter().take_while(|&&j| j < i).map(|&j| &claims[j]);
        if let Some((host, path, mark)) = &claim.bootstrap {
            let own = claim.pattern.iter().map(|p| (claim, p));
            let others = earlier
                .clone()
                .filter_map(|c| c.pattern.as_ref().map(|p| (c, p)));
            if let Some(other) = earlier
                .clone()
                .find(|c| c.bootstrap.as_ref().is_some_and(|b| b.0 == *host))
            {
                let owner = other.describe_for(claim);
                cx.error(
                    path,
                    *mark,
                    format_args!(
                        "name {:?} is already used by {owner} on port {}",
                        host.as_str(),
                        claim.port
                    ),
                );
            } else if let Some((other, (pattern, ..))) = own
                .chain(others)
                .find(|(_, p)| p.0.node_for(host.as_str()).is_some())
            {
                let owner = other.describe_for(claim);
                cx.error(
                    path,
                    *mark,
                    format_args!(
                        "name {:?} is a broker name of {owner} (brokerHostPattern {:?})",
                        host.as_str(),
                        pattern.to_string()
                    ),
                );
            }
        }
        if let Some((pattern, path, mark)) = &claim.pattern {
            let clash = earlier.clone().find_map(|c| {
                if let Some((b, ..)) = &c.bootstrap
                    && pattern.node_for(b.as_str()).is_some()
                {
                    return Some(format!(
                        "{:?} makes {:?}, the bootstrapHost of {}",
                        pattern.to_string(),
                        b.as_str(),
                        c.describe_for(claim)
                    ));
                }
                let (other, ..) = c.pattern.as_ref()?;
                overlap(pattern, other).then(|| {
                    format!(
                        "{:?} may make the same names as {:?} of {}: give each cluster its own \
                         domain (the text before or after $(nodeId) must differ)",
                        pattern.to_string(),
                        other.to_string(),
                        c.describe_for(claim)
                    )
                })
            });
            if let Some(message) = clash {
                cx.error(path, *mark, message);
            }
        }
    }
    cx.sni = claims;
}

/// A warning per SNI name the cluster's gateway certificate does not cover
/// (as clients verify it, RFC 6125: `*.example.com` covers exactly one
/// label). Broker names count as covered when the certificate covers any
/// node's name, or one of nodes 0-9 (a certificate listing each broker).
/// Nothing to say when the files were not read.
pub fn warnings(config: &ProxyConfig) -> Vec<String> {
    config.virtual_clusters.iter().flat_map(coverage).collect()
}

fn coverage(cluster: &VirtualCluster) -> Vec<String> {
    let (Some(sni), Some(tls)) = (cluster.gateway.sni(), &cluster.gateway.tls) else {
        return Vec::new();
    };
    let Some(leaf) = tls.material.0.cert_chain.first() else {
        return Vec::new();
    };
    let name = &cluster.name;
    let Ok(cert) = ParsedCertificate::try_from(leaf) else {
        return vec![format!(
            "virtual cluster {name}: the gateway certificate cannot be parsed to check the names it covers"
        )];
    };
    let covers = |host: &str| {
        ServerName::try_from(host).is_ok_and(|n| verify_server_name(&cert, &n).is_ok())
    };
    let mut out = Vec::new();
    let bootstrap = sni.bootstrap_host.as_str();
    if !covers(bootstrap) {
        out.push(format!(
            "virtual cluster {name}: the gateway certificate does not cover the bootstrap name {bootstrap}; clients that verify it will refuse to connect"
        ));
    }
    let pattern = &sni.broker_host_pattern;
    let any = pattern.host_for(i32::MAX).is_some_and(|h| covers(&h));
    let listed = (0..10).any(|id| pattern.host_for(id).is_some_and(|h| covers(&h)));
    if !any && !listed {
        let example = pattern.host_for(0).unwrap_or_default();
        out.push(format!(
            "virtual cluster {name}: the gateway certificate does not cover the broker names of {pattern} (such as {example}); clients that verify it will refuse the brokers"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(s: &str) -> HostPattern {
        s.parse().unwrap()
    }

    #[test]
    fn patterns_overlap_only_when_both_ends_are_related() {
        let orders = pattern("broker-$(nodeId).orders.example.com");
        let payments = pattern("broker-$(nodeId).payments.example.com");
        assert!(!overlap(&orders, &payments));
        assert!(overlap(&orders, &orders));
        // "b-12.x" is node 12 of one and node 2 of the other.
        assert!(overlap(
            &pattern("b-$(nodeId).x"),
            &pattern("b-1$(nodeId).x")
        ));
        assert!(!overlap(
            &pattern("a-$(nodeId).x"),
            &pattern("b-$(nodeId).x")
        ));
    }
}
