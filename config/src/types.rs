//! Value types of the configuration. Each is parsed once, at the edge, so the
//! rest of the proxy never sees an unchecked name, port or address.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

mod mechanism;
mod sni;
pub use mechanism::SaslMechanism;
pub use sni::{HostPattern, NODE_ID_PLACEHOLDER, SniHost};

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
