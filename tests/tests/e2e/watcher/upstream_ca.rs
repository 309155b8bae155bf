//! The upstream CA rotates in place too (the certificate issue): proxy `a`
//! reaches its upstream over TLS, here a second sluice-proxy (`b`,
//! terminating TLS in front of tansu). `a`'s CA file lives in a Secret-style
//! volume its watcher watches. The CA bundle grows to trust a new CA, `b`
//! moves to a certificate of the new CA, and the bundle drops the old CA:
//! `a` keeps its generation and drains nothing, a client connected through it
//! all along loses nothing and never disconnects, and a client that
//! connects at the end (new upstream connections) verifies with the new CA
//! alone.

use std::time::{Duration, Instant};

use sluice_testkit::certs::Ca;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_testkit::volume::Volume;
use sluice_testkit::watcher::Watcher;
use sluice_tests::peers::{TANSU_NODE_ID, Tansu};
use sluice_tests::python::Steady;

use super::files::{NO_RESYNC, made};

/// `b`: TLS in front of tansu with the pair at `cert`/`key` in its directory.
fn upstream(tansu: &str, port: u16, cert: &str, key: &str) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: b\n    upstream: {{ bootstrapServers: [\"{tansu}\"] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }}, tls: {{ certFile: {cert}, keyFile: {key} }} }}\n",
        port + 1
    )
}

/// `a`: plaintext for clients, TLS to `b` trusting the bundle in `secret`.
fn front(b: u16, port: u16, secret: &Volume) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\ndrainTimeout: 5s\nvirtualClusters:\n  - name: a\n    upstream: {{ bootstrapServers: [\"localhost:{b}\"], tls: {{ caFile: {} }} }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }} }}\n",
        secret.file("ca.pem").display(),
        port + 1
    )
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_new_upstream_ca_rotates_in_place_and_new_upstream_connections_verify_with_it() {
    let tansu = Tansu::start();
    tansu.create_topic("upstream-ca", 1);
    // The late client's own topic: steady.py's keys count from 0 in every
    // run, so on a shared topic the late group would read the first
    // client's messages under the same keys, and its count of what it lost
    // would mean nothing.
    tansu.create_topic("upstream-ca-late", 1);
    let (b_port, a_port) = (ports(2), ports(2));
    let dir = tempfile::tempdir().expect("dir");
    let (old_ca, new_ca) = (Ca::new("old upstream CA"), Ca::new("new upstream CA"));

    let b_dir = tempfile::tempdir().expect("b dir");
    old_ca
        .server("b old", 1)
        .write(b_dir.path(), "old.crt", "old.key");
    new_ca
        .server("b new", 2)
        .write(b_dir.path(), "new.crt", "new.key");
    let b = Proxy::start_in(b_dir, &upstream(&tansu.addr, b_port, "old.crt", "old.key"));

    let mut secret =
        Volume::create_files(&made(&dir, "secret"), &[("ca.pem", old_ca.pem.as_bytes())]);
    let mut a = Proxy::start(&front(b_port, a_port, &secret));
    a.allow("connection closed");
    let text = a.render(&front(b_port, a_port, &secret));
    let config = Volume::create(&made(&dir, "config"), "proxy.yaml", text.as_bytes());
    let watcher = Watcher::start(&config.path(), &a.admin, &NO_RESYNC);
    wait_for("the watcher never reconciled", || {
        watcher.metric("sluice_watcher_reloads_total{result=\"unchanged\"}") >= 1.0
    });
    let bootstrap = format!("127.0.0.1:{a_port}");
    let client = Steady::start(&bootstrap, "upstream-ca", "upstream-ca-group", true);
    let generation = |p: &Proxy| p.clusters().clusters[0].generation;
    let first = generation(&a);
    let rotations = |p: &Proxy| {
        p.logs()
            .iter()
            .filter(|l| l.contains("applied in place"))
            .count()
    };

    // 1. Trust both CAs.
    let both = format!("{}{}", old_ca.pem, new_ca.pem);
    secret.swap_files(&[("ca.pem", both.as_bytes())]);
    wait_for("the two-CA bundle was never applied", || rotations(&a) >= 1);
    // 2. The upstream moves to the new CA's certificate (in place too).
    let moved = b.reload(&upstream(&tansu.addr, b_port, "new.crt", "new.key"));
    assert_eq!(moved.status, 200, "{}", moved.body);
    assert!(moved.body.contains("clustersRotated"), "{}", moved.body);
    // 3. Trust only the new CA: the upstream check verifies `b` with it.
    secret.swap_files(&[("ca.pem", new_ca.pem.as_bytes())]);
    wait_for("the new-CA bundle was never applied", || rotations(&a) >= 2);

    // New upstream connections verify with the new CA alone.
    let late = Steady::start(&bootstrap, "upstream-ca-late", "upstream-ca-late", true);
    let late = late.finish();
    assert_eq!(late["lost"], 0, "{late}");
    assert_eq!(late["error_count"], 0, "{late}");

    assert_eq!(generation(&a), first, "no new generation");
    assert_eq!(a.metric("sluice_drained_connections_total"), 0.0);
    let report = client.finish();
    assert_eq!(report["lost"], 0, "{report}");
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["disconnects"], 0, "{report}");
}
