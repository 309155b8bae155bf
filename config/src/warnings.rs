//! What a valid configuration may still get wrong, said as warnings (by
//! `check`, the webhook and the admin API's `validate`): every source of
//! them in one list.

use crate::filter::FilterSpec;
use crate::model::{ProxyConfig, VirtualCluster};

/// Every warning for `config`, cluster by cluster.
pub fn warnings(config: &ProxyConfig) -> Vec<String> {
    let mut out = crate::sni::warnings(config);
    out.extend(
        config
            .virtual_clusters
            .iter()
            .flat_map(unmatched_principals),
    );
    out
}

/// Rules naming principals on a cluster whose connections have none (no
/// `authentication`): they cover no client; and a `perPrincipal` quota
/// there, which every connection shares as one.
fn unmatched_principals(cluster: &VirtualCluster) -> Vec<String> {
    if cluster.authentication.is_some() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (f, filter) in cluster.filters.iter().enumerate() {
        if let FilterSpec::Quota(q) = filter
            && !q.per_principal.is_empty()
        {
            out.push(format!(
                "virtual cluster {}: filters[{f}] perPrincipal without authentication: all \
                 connections share one bucket",
                cluster.name
            ));
        }
        let FilterSpec::TopicPolicy(policy) = filter else {
            continue;
        };
        for (r, rule) in policy.rules.iter().enumerate() {
            if rule.principals.is_some() {
                out.push(format!(
                    "virtual cluster {}: filters[{f}] rules[{r}] names principals without \
                     authentication: it covers no client",
                    cluster.name
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::files::MemoryFiles;

    fn read(yaml: &str) -> std::sync::Arc<crate::ProxyConfig> {
        let valid = crate::validate(yaml.as_bytes(), &MemoryFiles::default());
        valid.expect("valid").config
    }

    #[test]
    fn rules_naming_principals_without_authentication_are_warned_of() {
        let yaml = |auth: &str| {
            format!(
                r#"
virtualClusters:
  - name: orders
    upstream: {{ bootstrapServers: ["127.0.0.1:9092"] }}
    gateway:
      listenHost: 127.0.0.1
      advertisedHost: 127.0.0.1
      bootstrapPort: 19092
      brokerPorts: {{ start: 19093, count: 1 }}
{auth}
    filters:
      - type: topic-policy
        config:
          rules:
            - {{ allow: [produce], topics: ["*"], clientIds: ["app"] }}
            - {{ allow: [consume], topics: ["*"], principals: ["billing"] }}
      - type: quota
        config: {{ perPrincipal: {{ fetchBytesPerSecond: 1000 }} }}
"#
            )
        };
        let warned = super::warnings(&read(&yaml("")));
        assert_eq!(
            warned,
            [
                "virtual cluster orders: filters[0] rules[1] names principals without \
                 authentication: it covers no client",
                "virtual cluster orders: filters[1] perPrincipal without authentication: all \
                 connections share one bucket"
            ]
        );
    }
}
