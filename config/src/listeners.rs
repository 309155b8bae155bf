//! Listener conflicts: every port the configuration asks for, checked
//! against every other. Two listeners conflict when their port ranges overlap
//! and their hosts are equal or either is a wildcard (`0.0.0.0`, `::`),
//! except SNI ports: clusters routed by server name share one listener, so
//! their claims on the same host and port do not conflict with each other.

use super::claims::{Claim, Owner};
use super::read::Cx;

impl Claim {
    fn conflicts_with(&self, other: &Claim) -> Option<u16> {
        if self.shared && other.shared && self.host == other.host {
            return None;
        }
        let hosts =
            self.host == other.host || self.host.is_unspecified() || other.host.is_unspecified();
        let overlap = self.first <= other.last && other.first <= self.last;
        (hosts && overlap).then(|| self.first.max(other.first))
    }

    /// How `self` is named in an error about a later claim `by`.
    fn describe_for(&self, by: &Claim) -> String {
        match (&self.owner, &by.owner) {
            (Owner::Admin, _) => "the admin listener".to_owned(),
            (Owner::Cluster { index, field, .. }, Owner::Cluster { index: mine, .. })
                if index == mine =>
            {
                format!("this cluster's {field}")
            }
            (
                Owner::Cluster {
                    name: Some(name), ..
                },
                _,
            ) => format!("virtual cluster {name:?}"),
            (Owner::Cluster { index, .. }, _) => format!("virtualClusters[{index}]"),
        }
    }
}

/// Reports each claim that conflicts with an earlier one, once, naming the
/// first port they share and who holds it (the earliest such claim).
///
/// Claims are looked up by port, not compared pairwise: only those whose
/// first port lies within reach of this claim's range (the widest range
/// bounds how far back that is) can overlap it. With 1,000 clusters that is a
/// few candidates per claim instead of 2,000 (the pairwise check was half of
/// validating such a configuration).
pub(crate) fn check(cx: &mut Cx<'_>) {
    let claims = std::mem::take(&mut cx.claims);
    let mut by_first: Vec<usize> = (0..claims.len()).collect();
    by_first.sort_by_key(|&i| claims[i].first);
    let widest = claims.iter().map(|c| c.last - c.first).max().unwrap_or(0);
    for (i, claim) in claims.iter().enumerate() {
        let reach = claim.first.saturating_sub(widest);
        let from = by_first.partition_point(|&j| claims[j].first < reach);
        let to = by_first.partition_point(|&j| claims[j].first <= claim.last);
        let earlier = by_first[from..to]
            .iter()
            .filter(|&&j| j < i)
            .filter_map(|&j| claim.conflicts_with(&claims[j]).map(|port| (j, port)))
            .min_by_key(|&(j, _)| j);
        if let Some((holder, port)) = earlier {
            let holder = &claims[holder];
            let owner = holder.describe_for(claim);
            let hint = if claim.shared && holder.shared {
                " (SNI clusters share a port only on the same listenHost)"
            } else {
                ""
            };
            cx.error(
                &claim.path,
                claim.mark,
                format_args!("port {port} is already used by {owner}{hint}"),
            );
        }
    }
    cx.claims = claims;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::Mark;

    fn claim(host: &str, first: u16, last: u16, index: usize) -> Claim {
        Claim {
            host: host.parse().unwrap(),
            first,
            last,
            owner: Owner::Cluster {
                index,
                name: Some(format!("c{index}")),
                field: "brokerPorts",
            },
            path: format!("virtualClusters[{index}].gateway.brokerPorts"),
            mark: Mark::default(),
            shared: false,
        }
    }

    fn sni(host: &str, port: u16, index: usize) -> Claim {
        Claim {
            shared: true,
            ..claim(host, port, port, index)
        }
    }

    #[test]
    fn wildcards_conflict_with_every_host_but_distinct_hosts_do_not() {
        let a = claim("0.0.0.0", 100, 110, 0);
        assert_eq!(
            claim("127.0.0.1", 105, 120, 1).conflicts_with(&a),
            Some(105)
        );
        assert_eq!(claim("::", 110, 110, 1).conflicts_with(&a), Some(110));
        let b = claim("10.0.0.1", 100, 110, 0);
        assert_eq!(claim("10.0.0.2", 100, 110, 1).conflicts_with(&b), None);
        assert_eq!(claim("10.0.0.1", 111, 120, 1).conflicts_with(&b), None);
    }

    #[test]
    fn sni_ports_are_shared_on_one_host_only() {
        let a = sni("0.0.0.0", 9092, 0);
        assert_eq!(sni("0.0.0.0", 9092, 1).conflicts_with(&a), None);
        assert_eq!(sni("127.0.0.1", 9092, 1).conflicts_with(&a), Some(9092));
        assert_eq!(
            claim("0.0.0.0", 9090, 9095, 1).conflicts_with(&a),
            Some(9092)
        );
        assert_eq!(
            a.conflicts_with(&claim("127.0.0.1", 9092, 9092, 1)),
            Some(9092)
        );
    }
}
