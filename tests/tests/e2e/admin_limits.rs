//! The admin API under hostile callers: stalled headers (slowloris), a
//! stalled body and oversized headers cost the caller its connection, in
//! bounded time, while other callers are served.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::{Options, Proxy};

fn proxy() -> Proxy {
    let p = ports(2);
    let config = format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: a\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {p}, brokerPorts: {{ start: {}, count: 1 }} }}\n",
        p + 1
    );
    let options = Options {
        args: vec!["--admin-read-timeout".into(), "500ms".into()],
        ..Options::default()
    };
    Proxy::launch(tempfile::tempdir().unwrap(), &config, &options)
}

/// Reads until the peer closes (or 10 s pass); returns what arrived and when.
fn read_to_close(s: &mut TcpStream) -> (String, Duration) {
    let start = Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    (String::from_utf8_lossy(&out).into_owned(), start.elapsed())
}

#[test]
fn stalled_headers_are_cut_off_while_others_are_served() {
    let proxy = proxy();
    let mut slow = TcpStream::connect(&proxy.admin).unwrap();
    slow.write_all(b"GET /admin/health HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    // Another caller is served meanwhile.
    assert_eq!(proxy.get("/admin/health").status, 200);
    let (_, took) = read_to_close(&mut slow);
    assert!(
        took < Duration::from_secs(5),
        "a stalled caller held its connection for {took:?}"
    );
    proxy.assert_clean_logs();
}

#[test]
fn a_stalled_body_gets_408() {
    let proxy = proxy();
    let mut slow = TcpStream::connect(&proxy.admin).unwrap();
    slow.write_all(
        b"POST /admin/config/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nvirtual",
    )
    .unwrap();
    let (answer, took) = read_to_close(&mut slow);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    proxy.assert_clean_logs();
}

#[test]
fn oversized_headers_are_refused() {
    let proxy = proxy();
    let mut big = TcpStream::connect(&proxy.admin).unwrap();
    let mut request = b"GET /admin/health HTTP/1.1\r\nHost: x\r\nX-Pad: ".to_vec();
    request.extend(std::iter::repeat_n(b'a', 2 * 1024 * 1024));
    request.extend_from_slice(b"\r\n\r\n");
    let _ = big.write_all(&request);
    let (answer, took) = read_to_close(&mut big);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(proxy.get("/admin/health").status, 200);
    proxy.assert_clean_logs();
}

/// One byte every 200 ms never leaves the body silent for the 500 ms read
/// timeout, yet the whole body has 1.5 s (three times it), counted once.
#[test]
fn a_dribbled_body_is_cut_at_its_total_deadline() {
    let proxy = proxy();
    let mut slow = TcpStream::connect(&proxy.admin).unwrap();
    slow.write_all(
        b"POST /admin/config/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n",
    )
    .unwrap();
    let start = Instant::now();
    let mut writer = slow.try_clone().unwrap();
    let dribble = std::thread::spawn(move || {
        for _ in 0..100 {
            std::thread::sleep(Duration::from_millis(200));
            if writer.write_all(b"#").is_err() {
                return;
            }
        }
    });
    let (answer, _) = read_to_close(&mut slow);
    let took = start.elapsed();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(took < Duration::from_secs(4), "answered after {took:?}");
    drop(slow);
    let _ = dribble.join();
    proxy.assert_clean_logs();
}
