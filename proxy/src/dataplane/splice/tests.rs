//! When a direction splices, by mode and by where the peer is.

use super::*;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn auto_splices_only_into_a_peer_on_another_host() {
    let auto = |local, peer| Splicing::Auto.into_peer(addr(local), addr(peer));
    // Loopback, either family, and IPv4 mapped into IPv6.
    assert!(!auto("127.0.0.1:40000", "127.0.0.1:9092"));
    assert!(!auto("127.0.0.1:40000", "127.0.0.2:9092"));
    assert!(!auto("[::1]:40000", "[::1]:9092"));
    assert!(!auto("[::ffff:127.0.0.1]:40000", "[::ffff:127.0.0.1]:9092"));
    // This host's own address goes over loopback too.
    assert!(!auto("10.1.2.3:40000", "10.1.2.3:9092"));
    assert!(!auto("[::ffff:10.1.2.3]:40000", "10.1.2.3:9092"));
    // Another host: documentation ranges (RFC 5737, RFC 3849), which no
    // host has as its own (the check asks this host's interfaces).
    assert!(auto("10.1.2.3:40000", "198.51.100.4:9092"));
    assert!(auto("[fd00::1]:40000", "[2001:db8::2]:9092"));
}

#[test]
fn always_and_never_ignore_where_the_peer_is() {
    for (local, peer) in [("127.0.0.1:1", "127.0.0.1:2"), ("10.0.0.1:1", "10.0.0.2:2")] {
        assert!(Splicing::Always.into_peer(addr(local), addr(peer)));
        assert!(!Splicing::Never.into_peer(addr(local), addr(peer)));
    }
}

#[test]
fn a_copying_writer_offers_no_socket() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut tcp = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (_, wr) = tcp.split();
        assert!(wr.socket().is_some());
        assert!(Copying(wr).socket().is_none());
    });
}
