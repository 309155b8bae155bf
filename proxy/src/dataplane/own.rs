//! The data plane's own listening addresses, process-wide, so the proxy
//! never connects upstream to itself.
//!
//! A broker that advertises the proxy's address (as brokers behind a plain
//! TCP proxy are often told to), or a bootstrap server that names the proxy,
//! would otherwise send the proxy to its own port: that connection leads
//! upstream again, to the proxy again, without end, until the process runs
//! out of file descriptors and every cluster stops accepting. Measured
//! before this guard: 20,000 descriptors (the limit) taken within seconds of
//! one consumer's first fetch.
//!
//! An accept loop registers its address for as long as it owns the socket;
//! [`is_own`] tells, before connecting, whether an address is one of them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::{Mutex, OnceLock};

/// The addresses accept loops listen on now (one entry per loop).
static LISTENING: Mutex<Vec<SocketAddr>> = Mutex::new(Vec::new());

/// An address registered while this lives.
#[derive(Debug)]
pub(super) struct Listening(SocketAddr);

impl Listening {
    /// Registers `addr` until the result is dropped.
    pub(super) fn register(addr: SocketAddr) -> Listening {
        lock().push(addr);
        Listening(addr)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let mut all = lock();
        if let Some(i) = all.iter().position(|a| *a == self.0) {
            all.swap_remove(i);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<SocketAddr>> {
    LISTENING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether connecting to `target` would reach one of this process's
/// listeners. Asked before connecting: once connected, the listener would
/// already have accepted, and that connection would lead upstream too.
///
/// Allocates nothing: a small allocation made and freed at every
/// connection's setup left a hole behind each long-lived one (about 40 bytes
/// of RSS per idle connection, measured).
pub(super) fn is_own(target: SocketAddr) -> bool {
    reaches(&lock(), target, is_this_hosts)
}

/// Whether `target` is one of `listening`: the same address, or the same
/// port of a listener on every address (`0.0.0.0`, `::`) while `target` is
/// on this host (`here` decides, asked only then). An unspecified target
/// (`0.0.0.0`) is where Linux connects it: loopback.
fn reaches(listening: &[SocketAddr], target: SocketAddr, here: impl Fn(IpAddr) -> bool) -> bool {
    let ip = match target.ip().to_canonical() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    listening.iter().any(|l| {
        l.port() == target.port()
            && (l.ip().to_canonical() == ip || (l.ip().is_unspecified() && here(ip)))
    })
}

/// Whether `ip` is an address of this host: loopback, or one assigned to
/// any of its interfaces, secondary addresses included (a UDP socket can
/// bind it; nothing is sent). Where the kernel lets any address be bound
/// (`ip_nonlocal_bind`), only loopback and the addresses the routes pick as
/// their own source count.
pub(super) fn is_this_hosts(ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    if ip.is_loopback() {
        return true;
    }
    if nonlocal_bind(ip) {
        return route_source(ip) == Some(ip);
    }
    UdpSocket::bind((ip, 0)).is_ok()
}

/// Whether `net.ipv4.ip_nonlocal_bind` (or its IPv6 twin) is on, read once.
fn nonlocal_bind(ip: IpAddr) -> bool {
    static V4: OnceLock<bool> = OnceLock::new();
    static V6: OnceLock<bool> = OnceLock::new();
    let (cell, path) = match ip {
        IpAddr::V4(_) => (&V4, "/proc/sys/net/ipv4/ip_nonlocal_bind"),
        IpAddr::V6(_) => (&V6, "/proc/sys/net/ipv6/ip_nonlocal_bind"),
    };
    *cell.get_or_init(|| std::fs::read_to_string(path).is_ok_and(|v| v.trim() != "0"))
}

/// The source address the routes pick to reach `ip` (a UDP socket's
/// `connect` sends nothing; it only looks the route up).
fn route_source(ip: IpAddr) -> Option<IpAddr> {
    let any: IpAddr = match ip {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let udp = UdpSocket::bind((any, 0)).ok()?;
    udp.connect((ip, 9)).ok()?;
    udp.local_addr().ok().map(|a| a.ip().to_canonical())
}

/// Whether `peer` is on this host: loopback, the very address the socket is
/// bound to, or another of this host's addresses (the kernel routes all of
/// them over loopback).
pub(super) fn on_this_host(local: SocketAddr, peer: SocketAddr) -> bool {
    let peer = peer.ip().to_canonical();
    peer.is_loopback() || peer == local.ip().to_canonical() || is_this_hosts(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_target_is_own_on_the_same_address_or_the_port_of_any_address_here() {
        let listening = [
            addr("127.0.0.1:9192"),
            addr("0.0.0.0:9193"),
            addr("[::]:9194"),
        ];
        // This host's addresses, in this test: loopback and 10.0.0.5.
        let here = |ip: IpAddr| ip.is_loopback() || ip == IpAddr::from([10, 0, 0, 5]);
        let own = |target| reaches(&listening, addr(target), here);
        assert!(own("127.0.0.1:9192"));
        assert!(own("127.0.0.1:9193"));
        assert!(own("10.0.0.5:9193"));
        assert!(own("[::1]:9194"));
        assert!(own("[::ffff:10.0.0.5]:9194"));
        // Another port, another address of a specific listener, another host.
        assert!(!own("127.0.0.1:9195"));
        assert!(!own("127.0.0.2:9192"));
        assert!(!own("10.0.0.6:9193"));
    }

    #[test]
    fn loopback_and_only_this_hosts_addresses_are_here() {
        assert!(is_this_hosts(IpAddr::from([127, 0, 0, 1])));
        assert!(is_this_hosts(IpAddr::from([127, 3, 2, 1])));
        assert!(is_this_hosts("::1".parse().unwrap()));
        // The address this host would send from, where it has a route (a
        // UDP `connect` sends nothing), is its own.
        if let Some(source) = route_source(IpAddr::from([198, 51, 100, 7])) {
            assert!(is_this_hosts(source), "{source}");
        }
        // TEST-NET-2 (RFC 5737), a documentation range: no host's own.
        assert!(!is_this_hosts(IpAddr::from([198, 51, 100, 7])));
    }

    #[test]
    fn an_unspecified_target_is_loopback() {
        let listening = [addr("127.0.0.1:9192"), addr("[::1]:9194")];
        let nowhere = |_: IpAddr| false;
        assert!(reaches(&listening, addr("0.0.0.0:9192"), nowhere));
        assert!(reaches(&listening, addr("[::]:9194"), nowhere));
        assert!(!reaches(&listening, addr("0.0.0.0:9194"), nowhere));
    }

    #[test]
    fn an_address_is_own_while_registered() {
        // A port no other test registers: the registry is process-wide.
        let target = addr("127.0.0.1:1");
        assert!(!is_own(target));
        let first = Listening::register(target);
        let second = Listening::register(target);
        assert!(is_own(target));
        drop(first);
        assert!(is_own(target), "still listened on by the second");
        drop(second);
        assert!(!is_own(target));
    }
}
