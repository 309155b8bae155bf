//! The proxy as a process on a bare-metal host: startup policies, SIGHUP,
//! SIGTERM, and `--persist` on writable and read-only directories.

use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::{Options, Proxy};
use sluice_tests::peers::{TANSU_NODE_ID, Tansu};

fn cluster(name: &str, upstream: &str, port: u16) -> String {
    format!(
        "  - name: {name}\n    upstream: {{ bootstrapServers: [\"{upstream}\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {port}\n      brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }}\n",
        port + 1
    )
}

fn config(policy: &str, drain: &str, clusters: &[String]) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nstartupPolicy: {policy}\ndrainTimeout: {drain}\nvirtualClusters:\n{}",
        clusters.concat()
    )
}

#[test]
fn fail_fast_startup_exits_non_zero_naming_every_failed_cluster() {
    let (a, b, c) = (ports(2), ports(2), ports(2));
    let _held_b = TcpListener::bind(("127.0.0.1", b)).unwrap();
    let _held_c = TcpListener::bind(("127.0.0.1", c + 1)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = config(
        "fail-fast",
        "5s",
        &[
            cluster("a", "127.0.0.1:9", a),
            cluster("b", "127.0.0.1:9", b),
            cluster("c", "127.0.0.1:9", c),
        ],
    );
    let (_, mut proc, _) = Proxy::spawn(&dir, &text, &Options::default());
    let status = proc
        .wait_exit(Duration::from_secs(20))
        .expect("fail-fast startup did not exit");
    assert_eq!(status.code(), Some(1));
    let logs = proc.lines().join("\n");
    assert!(
        logs.contains("2 virtual cluster(s) failed to start"),
        "{logs}"
    );
    assert!(logs.contains(&format!("b: bind 127.0.0.1:{b}")), "{logs}");
    assert!(
        logs.contains(&format!("c: bind 127.0.0.1:{}", c + 1)),
        "{logs}"
    );
    // Everything it had bound was released.
    assert!(TcpListener::bind(("127.0.0.1", a)).is_ok());
}

#[test]
fn best_effort_startup_serves_the_rest_and_a_reload_retries_the_failed_cluster() {
    let tansu = Tansu::start();
    let (a, b) = (ports(2), ports(2));
    let held = TcpListener::bind(("127.0.0.1", b)).unwrap();
    let text = config(
        "best-effort",
        "5s",
        &[cluster("a", &tansu.addr, a), cluster("b", &tansu.addr, b)],
    );
    let mut proxy = Proxy::start(&text);
    proxy.allow("cluster generation failed");
    assert_eq!(proxy.get("/admin/ready").status, 200);
    let clusters = proxy.get("/admin/clusters").json();
    let by_name = |name: &str| {
        clusters["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(by_name("a")["state"], "accepting");
    assert_eq!(by_name("b")["state"], "failed");
    assert!(
        by_name("b")["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("bind 127.0.0.1:{b}"))
    );
    assert!(TcpStream::connect(("127.0.0.1", a)).is_ok());
    assert_eq!(
        proxy.metric("sluice_virtual_cluster_state{cluster=\"b\",state=\"failed\"}"),
        1.0
    );

    // Once the port is free, reloading the same configuration starts b.
    drop(held);
    let r = proxy.reload(&text);
    assert_eq!(r.status, 200, "{}", r.body);
    let clusters = proxy.get("/admin/clusters").json();
    let b_now = clusters["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "b")
        .unwrap();
    assert_eq!(b_now["state"], "accepting", "{clusters}");
    assert!(TcpStream::connect(("127.0.0.1", b)).is_ok());
    // The failed record was replaced: no failed generation is counted now.
    let metrics = proxy.get("/metrics").body;
    assert!(!metrics.contains("state=\"failed\""), "{metrics}");
    assert_eq!(
        proxy.metric("sluice_virtual_cluster_state{cluster=\"b\",state=\"accepting\"}"),
        1.0
    );
    proxy.assert_clean_logs();
}

#[test]
fn sighup_reloads_the_file_and_sigterm_drains_and_exits_zero() {
    let tansu = Tansu::start();
    let (a, b) = (ports(2), ports(2));
    let mut proxy = Proxy::start(&config("fail-fast", "2s", &[cluster("a", &tansu.addr, a)]));
    let v1 = proxy.get("/admin/config/status").json()["currentConfigVersion"].clone();

    let next = proxy.render(&config(
        "fail-fast",
        "2s",
        &[cluster("a", &tansu.addr, a), cluster("b", &tansu.addr, b)],
    ));
    std::fs::write(&proxy.config, &next).unwrap();
    proxy.process().signal("HUP");
    proxy.wait_for_log("configuration reloaded", Duration::from_secs(10));
    let status = proxy.get("/admin/config/status").json();
    assert_ne!(status["currentConfigVersion"], v1);
    assert_eq!(status["lastReloadAttempt"]["status"], "applied");
    let v2 = status["currentConfigVersion"].as_str().unwrap().to_owned();
    assert!(TcpStream::connect(("127.0.0.1", b)).is_ok());

    // An idle client connection is closed cleanly by the drain; exit 0.
    let idle = TcpStream::connect(("127.0.0.1", a)).unwrap();
    proxy.process().signal("TERM");
    let status = proxy
        .process()
        .wait_exit(Duration::from_secs(15))
        .expect("did not exit after SIGTERM");
    assert_eq!(status.code(), Some(0));
    drop(idle);
    let logs = proxy.logs().join("\n");
    assert!(
        logs.contains("stopping: not ready, draining every cluster"),
        "{logs}"
    );
    assert!(logs.contains("\"message\":\"stopped\""), "{logs}");
    // The SIGHUP reload's audit line: who (the signal), which version and
    // attempt, how.
    let audit = proxy
        .logs()
        .into_iter()
        .find(|l| l.contains("\"message\":\"admin call\""))
        .unwrap_or_else(|| panic!("no audit line:\n{logs}"));
    for part in [
        "\"caller\":\"signal:SIGHUP\"",
        "\"outcome\":\"applied\"",
        "\"attempt\":",
        &v2,
    ] {
        assert!(audit.contains(part), "{part}: {audit}");
    }
    proxy.assert_clean_logs();
}

#[test]
fn persist_writes_applied_configurations_back_atomically() {
    let tansu = Tansu::start();
    let (a, b) = (ports(2), ports(2));
    let options = Options {
        args: vec!["--persist".into()],
        ..Options::default()
    };
    let proxy = Proxy::launch(
        tempfile::tempdir().unwrap(),
        &config("fail-fast", "2s", &[cluster("a", &tansu.addr, a)]),
        &options,
    );
    let next = proxy.render(&config(
        "fail-fast",
        "2s",
        &[cluster("a", &tansu.addr, a), cluster("b", &tansu.addr, b)],
    ));
    let r = proxy.post("/admin/config/reload", next.as_bytes(), &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(std::fs::read_to_string(&proxy.config).unwrap(), next);
    let leftovers: Vec<_> = std::fs::read_dir(proxy.dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains("sluice-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    proxy.assert_clean_logs();
}

#[test]
fn persist_on_a_read_only_directory_applies_and_leaves_the_file_alone() {
    let tansu = Tansu::start();
    let (a, b) = (ports(2), ports(2));
    let options = Options {
        args: vec!["--persist".into()],
        read_only_dir: true,
        ..Options::default()
    };
    let original = config("fail-fast", "2s", &[cluster("a", &tansu.addr, a)]);
    let mut proxy = Proxy::launch(tempfile::tempdir().unwrap(), &original, &options);
    let on_disk = std::fs::read_to_string(&proxy.config).unwrap();
    let next = proxy.render(&config(
        "fail-fast",
        "2s",
        &[cluster("a", &tansu.addr, a), cluster("b", &tansu.addr, b)],
    ));
    let r = proxy.post("/admin/config/reload", next.as_bytes(), &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    proxy.wait_for_log(
        "not persisted: the configuration's directory is read-only",
        Duration::from_secs(5),
    );
    assert_eq!(std::fs::read_to_string(&proxy.config).unwrap(), on_disk);
    assert_eq!(
        proxy.get("/admin/config").body,
        next,
        "the reload itself applied"
    );
}
