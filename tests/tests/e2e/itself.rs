//! A broker that advertises the proxy's own address, as brokers behind a
//! plain TCP proxy are told to: the proxy refuses to connect to itself, says
//! why, and closes the client's connection. Before, one client connection to
//! the broker port sent the proxy to its own port, whose connection went
//! upstream to the proxy again, without end: all 20,000 of its file
//! descriptors (its limit) taken within seconds, every cluster refusing
//! clients ("Too many open files").

use std::io::Read;
use std::net::TcpStream;
use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::{tansu_cluster, with_drain};
use sluice_tests::peers::Tansu;

const TIMEOUT: Duration = Duration::from_secs(30);
const WHY: &str = "the upstream address is the proxy's own";

#[test]
fn a_broker_advertising_the_proxys_own_port_is_refused_not_looped() {
    let base = ports(2);
    let broker_port = base + 1;
    let tansu = Tansu::start_advertising(Some(&format!("127.0.0.1:{broker_port}")));
    let mut proxy = Proxy::start(&with_drain(
        "1s",
        &[tansu_cluster("loop", &tansu.addr, base, "")],
    ));
    proxy.allow(WHY);

    // A client's first connection, to the broker port: the proxy looks the
    // broker up, and tansu says it is at the proxy's own broker port.
    let mut client = TcpStream::connect(("127.0.0.1", broker_port)).expect("connect");
    client.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut byte = [0u8; 1];
    match client.read(&mut byte) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the proxy should close the connection, got {other:?}"),
    }
    let line = proxy.wait_for_log(WHY, TIMEOUT);
    assert!(
        line.contains(&format!("127.0.0.1:{broker_port}")) && line.contains("advertised.listeners"),
        "the warning names the address and the fix: {line}"
    );
    let fds = std::fs::read_dir(format!("/proc/{}/fd", proxy.pid()))
        .expect("the proxy's descriptors")
        .count();
    assert!(fds < 100, "{fds} descriptors open");
}
