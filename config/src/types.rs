//! Value types of the configuration. Each is parsed once, at the edge, so the
//! rest of the proxy never sees an unchecked name, port or address.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

/// A virtual cluster's name: a DNS-1123 label, because it ends up in metric
/// labels, log fields and Kubernetes object names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ClusterName(String);

impl ClusterName {
    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for ClusterName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if is_dns_label(s) {
            Ok(ClusterName(s.to_owned()))
        } else {
            Err(format!(
                "{s:?} is not a valid name: use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit"
            ))
        }
    }
}

impl fmt::Display for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// A TCP port, 1 to 65535.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Port(u16);

impl Port {
    /// Checks that `n` is a usable port.
    pub fn new(n: i64) -> Result<Self, String> {
        match u16::try_from(n) {
            Ok(p) if p != 0 => Ok(Port(p)),
            _ => Err(format!("port {n} is out of range 1-65535")),
        }
    }

    /// The port number.
    pub fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A host clients or the proxy can reach: an IP address or a DNS name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub enum Host {
    /// An IPv4 or IPv6 address.
    Ip(IpAddr),
    /// A DNS name (RFC 1123), compared as written.
    Name(String),
}

impl FromStr for Host {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(Host::Ip(ip));
        }
        let name = s.strip_suffix('.').unwrap_or(s);
        let labels_ok = name.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        });
        // An all-numeric dotted name would be read as a (bad) IPv4 address.
        let numeric = name
            .split('.')
            .all(|l| l.bytes().all(|c| c.is_ascii_digit()));
        if !name.is_empty() && name.len() <= 253 && labels_ok && !numeric {
            Ok(Host::Name(s.to_owned()))
        } else {
            Err(format!("{s:?} is not a valid host name or IP address"))
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ip(ip) => ip.fmt(f),
            Host::Name(n) => f.write_str(n),
        }
    }
}

impl From<Host> for String {
    fn from(h: Host) -> String {
        h.to_string()
    }
}

/// `host:port` of an upstream broker; IPv6 addresses in brackets.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub struct HostPort {
    /// The host.
    pub host: Host,
    /// The port.
    pub port: Port,
}

impl FromStr for HostPort {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a valid host:port");
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (ip, port) = rest.split_once("]:").ok_or_else(bad)?;
            let ip: std::net::Ipv6Addr = ip.parse().map_err(|_| bad())?;
            (Host::Ip(IpAddr::V6(ip)), port)
        } else {
            let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
            if host.contains(':') {
                return Err(format!(
                    "{s:?} is not a valid host:port (write IPv6 addresses in brackets: [::1]:9092)"
                ));
            }
            (host.parse::<Host>().map_err(|_| bad())?, port)
        };
        let port = port
            .parse::<i64>()
            .map_err(|_| bad())
            .and_then(|p| Port::new(p).map_err(|e| format!("{s:?}: {e}")))?;
        Ok(HostPort { host, port })
    }
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.host {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            _ => write!(f, "{}:{}", self.host, self.port),
        }
    }
}

impl From<HostPort> for String {
    fn from(h: HostPort) -> String {
        h.to_string()
    }
}

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

/// Parses a socket address to listen on: an IP address and a port.
pub(crate) fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = s
        .parse()
        .map_err(|_| format!("{s:?} is not an IP address and port (e.g. 127.0.0.1:9190)"))?;
    Port::new(i64::from(addr.port()))?;
    Ok(addr)
}

/// Parses an IP address to listen on.
pub(crate) fn parse_ip(s: &str) -> Result<IpAddr, String> {
    s.parse()
        .map_err(|_| format!("{s:?} is not an IP address (use 0.0.0.0 for every IPv4 interface)"))
}

/// Longest duration accepted anywhere in the configuration (and on any
/// command line): [`sluice_process::duration::MAX`].
pub const MAX_DURATION: Duration = sluice_process::duration::MAX;

/// Parses `500ms`, `30s`, `2m` or `1h`: a whole number and one unit, at
/// most [`MAX_DURATION`]; the one parser every Sluice binary uses.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    sluice_process::duration::parse(s).map_err(|e| e.to_string())
}

/// Prints a duration the way it would be written in the configuration.
pub fn format_duration(d: Duration) -> String {
    sluice_process::duration::format(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_are_dns_labels() {
        assert!("orders".parse::<ClusterName>().is_ok());
        assert!("a-1".parse::<ClusterName>().is_ok());
        for bad in ["", "Orders", "-a", "a-", "a_b", "a.b", &"a".repeat(64)] {
            assert!(bad.parse::<ClusterName>().is_err(), "{bad}");
        }
    }

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

    #[test]
    fn host_ports_parse_names_v4_and_bracketed_v6() {
        let hp: HostPort = "kafka-0.kafka:9092".parse().unwrap();
        assert_eq!(hp.to_string(), "kafka-0.kafka:9092");
        let hp: HostPort = "[::1]:9092".parse().unwrap();
        assert_eq!(hp.host, Host::Ip("::1".parse().unwrap()));
        assert_eq!(hp.to_string(), "[::1]:9092");
        for bad in [
            "kafka", "kafka:", "kafka:0", "kafka:x", "::1:9092", "a_b:1", "1.2.3:9",
        ] {
            assert!(bad.parse::<HostPort>().is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_round_trip() {
        for (text, ms) in [
            ("500ms", 500),
            ("30s", 30_000),
            ("2m", 120_000),
            ("1h", 3_600_000),
        ] {
            let d = parse_duration(text).unwrap();
            assert_eq!(d, Duration::from_millis(ms));
            assert_eq!(format_duration(d), text);
        }
        for bad in [
            "",
            "30",
            "s",
            "30 s",
            "1.5s",
            "-1s",
            "30sec",
            "25h",
            "99999999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
