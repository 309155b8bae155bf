//! `run --persist` writes each applied configuration back atomically, before
//! the reload answers, even when the caller has gone. Before the fix the
//! temporary file had one fixed name: anything left at that name (a crashed
//! write's leftover, another writer's file) made every persist fail.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::{Options, Proxy};

use super::{CLUSTERS, many, slow_dir};

fn wait_for_file(path: &std::path::Path, bytes: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(path).ok().as_deref() != Some(bytes) {
        assert!(
            Instant::now() < deadline,
            "{} never held the applied bytes",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn persisting_survives_a_leftover_temporary_file_and_a_caller_that_left() {
    let port = ports(2 * CLUSTERS);
    let dir = slow_dir();
    let options = Options {
        args: vec!["--persist".into()],
        ..Options::default()
    };
    let base = many(port, "localhost");
    let proxy = Proxy::launch(dir, &base, &options);
    std::fs::create_dir(proxy.dir().join(".proxy.yaml.sluice-tmp")).expect("leftover");

    let first = proxy.render(&base.replace("localhost", "first.proxy.local"));
    let answer = proxy.reload(&first);
    assert_eq!(answer.status, 200, "{}", answer.body);
    // Written before the answer.
    assert_eq!(std::fs::read_to_string(&proxy.config).expect("read"), first);

    // A caller that sends a (slow) reload and goes away, without reading,
    // once it runs.
    let second = proxy.render(&many(port, "second.proxy.local"));
    let mut caller = TcpStream::connect(&proxy.admin).expect("connect");
    let head = format!(
        "POST /admin/config/reload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n",
        second.len()
    );
    caller.write_all(head.as_bytes()).expect("head");
    caller.write_all(second.as_bytes()).expect("body");
    let deadline = Instant::now() + Duration::from_secs(30);
    while proxy.status().reload_in_progress_since.is_none() {
        assert!(Instant::now() < deadline, "the reload never started");
    }
    drop(caller);
    wait_for_file(&proxy.config, &second);
    let leftovers: Vec<String> = std::fs::read_dir(proxy.dir())
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sluice-tmp") && n != ".proxy.yaml.sluice-tmp")
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}
