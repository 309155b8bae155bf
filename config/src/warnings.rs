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
/// `authentication`): they cover no client.
fn unmatched_principals(cluster: &VirtualCluster) -> Vec<String> {
    if cluster.authentication.is_some() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (f, filter) in cluster.filters.iter().enumerate() {
        let FilterSpec::TopicPolicy(policy) = filter else {
            continue;
        };
        for (r, rule) in policy.rules.iter().enumerate() {
            if rule.principals.is_some() {
                out.push(format!(
                    "virtual cluster {}: filters[{f}].config.rules[{r}] names principals, but \
                     the cluster has no authentication: it covers no client",
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
"#
            )
        };
        let warned = super::warnings(&read(&yaml("")));
        assert_eq!(
            warned,
            [
                "virtual cluster orders: filters[0].config.rules[1] names principals, but the \
              cluster has no authentication: it covers no client"
            ]
        );
    }
}
