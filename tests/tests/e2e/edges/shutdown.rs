//! Shutdown is a state the admin API respects. Before the fix, a reload
//! posted after SIGTERM, while a connection drained, answered 200 and
//! opened listeners again on the stopping process.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use sluice_admin_api::{ReloadAnswer, endpoints};
use sluice_testkit::http::wait_for_status;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;

use super::{black_hole, cluster, proxy_config};

/// ApiVersions v0, correlation id 1, no client id.
const API_VERSIONS: [u8; 14] = [0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff];

#[test]
fn after_sigterm_a_reload_answers_503_no_listener_opens_and_the_process_exits_once_drained() {
    let port = ports(4);
    let (hole, upstream) = black_hole();
    let upstream = format!("bootstrapServers: [127.0.0.1:{upstream}], checkOnReload: false");
    let top = "drainTimeout: 60s\n";
    let mut proxy = Proxy::start(&proxy_config(top, &[cluster("a", port, &upstream, "")]));
    proxy.allow("shutting down");

    // A request the upstream never answers keeps the drain going.
    let mut client = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    client.write_all(&API_VERSIONS).expect("send");
    proxy.wait_for_metric(
        "sluice_connections_active{cluster=\"a\"}",
        1.0,
        Duration::from_secs(10),
    );
    let upstream_side = accept(&hole);

    proxy.process().signal("TERM");
    wait_for_status(&proxy.admin, endpoints::READY, 503, Duration::from_secs(10));
    let grown = proxy_config(
        top,
        &[
            cluster("a", port, &upstream, "").replace("localhost", "a.proxy.local"),
            cluster("b", port + 2, &upstream, ""),
        ],
    );
    let answer = proxy.reload(&grown);
    assert_eq!(answer.status, 503, "{}", answer.body);
    let ReloadAnswer::ShuttingDown(refused) =
        ReloadAnswer::from_http(answer.status, answer.body.as_bytes()).expect("typed answer")
    else {
        panic!("not a shutting-down answer: {}", answer.body);
    };
    assert!(refused.error.contains("shutting down"), "{}", refused.error);
    let status = proxy.status();
    assert!(status.stopping && !status.ready);
    assert!(
        !status.current_config_version.as_str().is_empty(),
        "still answers reads"
    );
    for closed in [port, port + 2] {
        assert!(
            TcpStream::connect(("127.0.0.1", closed)).is_err(),
            "port {closed} accepts connections on a stopping proxy"
        );
    }

    // The drain ends when the last connection does (here the upstream
    // hangs up), not at drainTimeout.
    drop(upstream_side);
    drop(client);
    let closed = Instant::now();
    let exit = proxy
        .process()
        .wait_exit(Duration::from_secs(20))
        .expect("the proxy exits once drained");
    assert!(exit.success(), "{exit:?}");
    assert!(closed.elapsed() < Duration::from_secs(20));
}

/// The proxy's connection to the black hole, once it has made it.
fn accept(hole: &std::net::TcpListener) -> TcpStream {
    hole.set_nonblocking(true).expect("nonblocking");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match hole.accept() {
            Ok((conn, _)) => return conn,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(
                    Instant::now() < deadline,
                    "the proxy never connected upstream"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}
