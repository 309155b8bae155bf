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
use std::sync::Mutex;

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
    reaches(&lock(), target, on_this_host_by_route)
}

/// Whether `target` is one of `listening`: the same address, or the same
/// port of a listener on every address (`0.0.0.0`, `::`) while `target` is
/// on this host (`here` decides, asked only then).
fn reaches(listening: &[SocketAddr], target: SocketAddr, here: impl Fn(IpAddr) -> bool) -> bool {
    let ip = target.ip().to_canonical();
    listening.iter().any(|l| {
        l.port() == target.port()
            && (l.ip().to_canonical() == ip || (l.ip().is_unspecified() && here(ip)))
    })
}

/// Whether `ip` is an address of this host: loopback, or the source address
/// the kernel's routes would pick to reach it (a UDP socket's `connect`
/// sends nothing; it only looks the route up).
fn on_this_host_by_route(ip: IpAddr) -> bool {
    if ip.is_loopback() {
        return true;
    }
    let any: IpAddr = match ip {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    UdpSocket::bind((any, 0))
        .and_then(|udp| {
            udp.connect((ip, 9))?;
            udp.local_addr()
        })
        .is_ok_and(|local| local.ip().to_canonical() == ip)
}

/// Whether `peer` is on this host: a loopback address, or the very address
/// the socket is bound to (the kernel routes that over loopback too).
pub(super) fn on_this_host(local: SocketAddr, peer: SocketAddr) -> bool {
    let peer = peer.ip().to_canonical();
    peer.is_loopback() || peer == local.ip().to_canonical()
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
        assert!(on_this_host_by_route(IpAddr::from([127, 0, 0, 1])));
        assert!(on_this_host_by_route(IpAddr::from([127, 3, 2, 1])));
        // The address this host would send from, where it has a route (a
        // UDP `connect` sends nothing), is its own.
        let source = UdpSocket::bind("0.0.0.0:0").and_then(|udp| {
            udp.connect("198.51.100.7:9")?;
            udp.local_addr()
        });
        if let Ok(source) = source {
            assert!(on_this_host_by_route(source.ip()), "{source}");
        }
        // TEST-NET-2 (RFC 5737), a documentation range: no host's own.
        assert!(!on_this_host_by_route(IpAddr::from([198, 51, 100, 7])));
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
