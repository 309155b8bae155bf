//! What an idle connection costs: RSS per connection of sluice-proxy and of
//! haproxy (TCP mode), each in front of the same broker, with 10,000 client
//! connections open that each sent one ApiVersions request, read the answer
//! and went idle. A fresh proxy of each kind per repetition, in turn.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use sluice_testkit::ports::{port, ports};
use sluice_testkit::proxy::Proxy;
use sluice_tests::config;

use crate::haproxy::{Frontend, start_haproxy};
use crate::rig::{Path, Rig, open_file_limit, vm_kib};
use sluice_tools::record::{Row, Target};

const SECTION: &str = "memory";

/// Opens `n` connections to `addr`, each with one ApiVersions round trip,
/// and returns them open and idle.
fn idle_connections(addr: &str, n: usize) -> Vec<TcpStream> {
    // ApiVersions v0: key 18, version 0, correlation id 1, client id "bench".
    let mut request = vec![0, 0, 0, 15, 0, 18, 0, 0, 0, 0, 0, 1, 0, 5];
    request.extend_from_slice(b"bench");
    (0..n)
        .map(|i| {
            let mut s = TcpStream::connect(addr)
                .unwrap_or_else(|e| panic!("connection {i} to {addr}: {e}"));
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            s.write_all(&request).expect("send ApiVersions");
            let mut size = [0u8; 4];
            s.read_exact(&mut size).expect("read ApiVersions answer");
            let mut body = vec![0u8; u32::from_be_bytes(size) as usize];
            s.read_exact(&mut body).expect("read ApiVersions answer");
            s
        })
        .collect()
}

/// RSS (KiB) of `pid` before and with `n` idle connections through `addr`.
fn measure(pid: u32, addr: &str, n: usize) -> (f64, f64) {
    let before = vm_kib(pid, "VmRSS");
    let open = idle_connections(addr, n);
    // Whatever the connections' tasks still do after the answer settles.
    std::thread::sleep(Duration::from_millis(500));
    let with = vm_kib(pid, "VmRSS");
    drop(open);
    (before, with)
}

/// Runs `reps` repetitions with `connections` idle connections on each
/// proxy and emits the figures.
pub(crate) fn run(rig: &Rig, reps: usize, wanted: usize) {
    // A proxy holds two sockets per connection, under the same limit.
    let limit = open_file_limit();
    let connections = wanted.min(limit.saturating_sub(200) / 2);
    if connections < wanted {
        eprintln!(
            "memory: {connections} connections, not {wanted}: the open-file limit is {limit} \
             and may not be raised here (a proxy needs two per connection)"
        );
    }
    let broker = rig.broker(Path::Direct).addr.clone();
    let (mut sluice, mut haproxy) = (Vec::new(), Vec::new());
    let (mut sluice_total, mut haproxy_total) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        eprintln!(
            "memory: repetition {} of {reps}, {connections} idle connections each",
            rep + 1
        );
        for which in [rep % 2, (rep + 1) % 2] {
            if which == 0 {
                let base = ports(2);
                let limits = "    limits: { maxConnections: 20000 }\n";
                let proxy = Proxy::start(&config::with_drain(
                    "1s",
                    &[config::tansu_cluster("mem", &broker, base, limits)],
                ));
                let (before, with) =
                    measure(proxy.pid(), &format!("127.0.0.1:{base}"), connections);
                sluice.push((with - before) / connections as f64);
                sluice_total.push(with / 1024.0);
                proxy.assert_clean_logs();
            } else {
                let listen = format!("127.0.0.1:{}", port());
                let h = start_haproxy(&[Frontend::plain(&listen, &broker)]);
                let (before, with) = measure(h.pid(), &listen, connections);
                haproxy.push((with - before) / connections as f64);
                haproxy_total.push(with / 1024.0);
            }
        }
    }
    Row::new(
        SECTION,
        format!("RSS per idle connection, {connections} connections: sluice-proxy"),
        "KiB",
        sluice,
    )
    .baseline("haproxy", haproxy)
    .target(Target::RatioAtMost(1.0), "<= 1.00x haproxy")
    .note(format!(
        "each connection sent one ApiVersions request and read the answer; RSS with them open minus RSS before, per connection; {connections} of the {wanted} asked for fit the open-file limit of {limit}"
    ))
    .emit();
    Row::new(
        SECTION,
        format!("RSS with {connections} idle connections: sluice-proxy"),
        "MiB",
        sluice_total,
    )
    .baseline("haproxy", haproxy_total)
    .emit();
}
