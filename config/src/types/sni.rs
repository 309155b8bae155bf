//! The names the SNI port routes by: a cluster's bootstrap name and the
//! pattern its brokers' names follow.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::is_dns_label;

/// A DNS name clients put in the TLS server name (SNI) to reach a virtual
/// cluster: a DNS-1123 subdomain (lowercase labels of letters, digits and
/// `-`, at most 253 characters), never an IP address, so the lookup is an
/// exact comparison.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SniHost(String);

impl SniHost {
    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for SniHost {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if is_dns_subdomain(s) {
            Ok(SniHost(s.to_owned()))
        } else {
            Err(format!(
                "{s:?} is not a DNS-1123 name: use lowercase letters, digits, '-' and '.', each label starting and ending with a letter or digit, at most 253 characters, not an IP address"
            ))
        }
    }
}

impl fmt::Display for SniHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_dns_subdomain(s: &str) -> bool {
    // All-numeric names read as IPv4 addresses to resolvers (`inet_aton`).
    let numeric = s.split('.').all(|l| l.bytes().all(|c| c.is_ascii_digit()));
    s.len() <= 253 && s.split('.').all(is_dns_label) && !numeric
}

/// The placeholder a broker host pattern holds exactly once.
pub const NODE_ID_PLACEHOLDER: &str = "$(nodeId)";

/// The names of a virtual cluster's brokers: `broker-$(nodeId).example.com`
/// names node 3 `broker-3.example.com`. Every name it makes is a valid
/// [`SniHost`] (checked with the longest node id).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub struct HostPattern {
    prefix: String,
    suffix: String,
}

impl HostPattern {
    /// The text before `$(nodeId)`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The text after `$(nodeId)`.
    pub fn suffix(&self) -> &str {
        &self.suffix
    }

    /// The host name of a node; `None` for a negative id (no Kafka node has one).
    pub fn host_for(&self, node_id: i32) -> Option<String> {
        (node_id >= 0).then(|| format!("{}{node_id}{}", self.prefix, self.suffix))
    }

    /// The node a host name names, if it is one of this pattern's: the id
    /// written in decimal without leading zeros, so each node has one name.
    pub fn node_for(&self, host: &str) -> Option<i32> {
        let digits = host
            .strip_prefix(self.prefix.as_str())?
            .strip_suffix(self.suffix.as_str())?;
        let canonical = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        canonical.then(|| digits.parse().ok()).flatten()
    }
}

impl FromStr for HostPattern {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split(NODE_ID_PLACEHOLDER).collect();
        let [prefix, suffix] = parts.as_slice() else {
            return Err(format!(
                "{s:?} must hold {NODE_ID_PLACEHOLDER} exactly once (found it {} times)",
                parts.len() - 1
            ));
        };
        let longest = format!("{prefix}{}{suffix}", i32::MAX);
        if !is_dns_subdomain(&longest) {
            return Err(format!(
                "{s:?} does not make DNS-1123 names (node {} would be {longest:?}): use lowercase letters, digits, '-' and '.', each label starting and ending with a letter or digit, at most 253 characters",
                i32::MAX
            ));
        }
        Ok(HostPattern {
            prefix: (*prefix).to_owned(),
            suffix: (*suffix).to_owned(),
        })
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{NODE_ID_PLACEHOLDER}{}", self.prefix, self.suffix)
    }
}

impl From<HostPattern> for String {
    fn from(p: HostPattern) -> String {
        p.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sni_hosts_are_dns_1123_names() {
        for good in ["bootstrap.orders.kafka.example.com", "a", "a-1.b"] {
            assert!(good.parse::<SniHost>().is_ok(), "{good}");
        }
        for bad in [
            "",
            "Bootstrap.example.com",
            "a..b",
            "-a.b",
            "a_b.c",
            "127.0.0.1",
            "2130706433",
            "a.b.",
            "*.example.com",
            &format!("{}.com", "a".repeat(250)),
        ] {
            assert!(bad.parse::<SniHost>().is_err(), "{bad}");
        }
    }

    #[test]
    fn host_patterns_name_each_node_once() {
        let p: HostPattern = "broker-$(nodeId).orders.example.com".parse().unwrap();
        assert_eq!(
            p.host_for(3).as_deref(),
            Some("broker-3.orders.example.com")
        );
        assert_eq!(p.host_for(-1), None);
        assert_eq!(p.node_for("broker-3.orders.example.com"), Some(3));
        assert_eq!(p.node_for("broker-0.orders.example.com"), Some(0));
        assert_eq!(
            p.node_for("broker-2147483647.orders.example.com"),
            Some(i32::MAX)
        );
        for other in [
            "broker-03.orders.example.com",
            "broker-.orders.example.com",
            "broker-x.orders.example.com",
            "broker-2147483648.orders.example.com",
            "broker-3.payments.example.com",
        ] {
            assert_eq!(p.node_for(other), None, "{other}");
        }
        assert_eq!(p.to_string(), "broker-$(nodeId).orders.example.com");
        for bad in [
            "broker.example.com",
            "b-$(nodeId)-$(nodeId).example.com",
            "B-$(nodeId).example.com",
            "b-$(nodeId)..example.com",
            "$(nodeId)",
        ] {
            assert!(bad.parse::<HostPattern>().is_err(), "{bad}");
        }
    }
}
