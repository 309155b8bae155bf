//! Reloads on the shared SNI port: adding a third SNI cluster, then
//! modifying it, while steady producers and consumer groups run on the
//! other two. They never notice (no error, no reconnect, the same
//! generation), and the port refuses no connection at any point.

use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sluice_testkit::ports::port;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::{listed_times, with_drain};
use sluice_tests::peers::Tansu;
use sluice_tests::python::{self, Steady};

use super::{certificates, cluster, hosts};

#[test]
fn adding_and_modifying_an_sni_cluster_leaves_the_others_on_the_port_undisturbed() {
    let tansu = Tansu::start();
    for topic in ["orders", "payments", "audit"] {
        tansu.create_topic(topic, 2);
    }
    let sni = port();
    let dir = tempfile::tempdir().expect("dir");
    let ca = certificates(dir.path(), &["orders", "payments", "audit"]);
    let two = [
        cluster("orders", &tansu.addr, sni, ""),
        cluster("payments", &tansu.addr, sni, ""),
    ];
    let proxy = Proxy::start_in(dir, &with_drain("3s", &two));
    let hosts = hosts(&["orders", "payments", "audit"]);
    let steady = |name: &str| {
        let mut cmd = hosts.python("steady.py");
        let bootstrap = format!("{}:{sni}", super::bootstrap(name));
        cmd.args([&bootstrap, name, &format!("{name}-group"), "--idempotent"]);
        cmd.arg("--ca").arg(&ca);
        Steady::start_command(cmd)
    };
    let clients = [steady("orders"), steady("payments")];
    let before =
        ["orders", "payments"].map(|n| (proxy.connections_accepted(n), proxy.generation(n)));

    // Connect to the shared port as fast as possible all along.
    let stop = Arc::new(AtomicBool::new(false));
    let (opened, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let probe = {
        let (stop, opened, refused) =
            (Arc::clone(&stop), Arc::clone(&opened), Arc::clone(&refused));
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                match TcpStream::connect(("127.0.0.1", sni)) {
                    Ok(_) => opened.fetch_add(1, Ordering::Relaxed),
                    Err(_) => refused.fetch_add(1, Ordering::Relaxed),
                };
            }
        })
    };

    // Add a third cluster on the port; it serves at once.
    let mut three = two.to_vec();
    three.push(cluster("audit", &tansu.addr, sni, ""));
    let added = proxy.reload(&with_drain("3s", &three));
    assert_eq!(added.status, 200, "{}", added.body);
    let added = added.json();
    assert_eq!(added["clustersAdded"], serde_json::json!(["audit"]));
    // A new client of a cluster, through its names: produce, then consume
    // in a group of its own.
    let roundtrip = |name: &str, count: &str| {
        let mut cmd = hosts.python("roundtrip.py");
        let bootstrap = format!("{}:{sni}", super::bootstrap(name));
        cmd.args([&bootstrap, name, count, &format!("{name}-{count}")]);
        cmd.args([
            "--ssl",
            &ca.display().to_string(),
            "-",
            "-",
            "--verify-names",
        ]);
        python::run_json_command(cmd, Duration::from_secs(90))
    };
    let report = roundtrip("audit", "50");
    assert_eq!(report["unique"], 50, "{report}");

    // Modify it: a new generation behind the same names and port.
    three[2] = listed_times(&cluster("audit", &tansu.addr, sni, ""), &tansu.addr, 2);
    let modified = proxy.reload(&with_drain("3s", &three));
    assert_eq!(modified.status, 200, "{}", modified.body);
    assert_eq!(
        modified.json()["clustersModified"][0]["name"],
        "audit",
        "{}",
        modified.body
    );
    let report = roundtrip("audit", "60");
    assert_eq!(report["unique"], 60, "{report}");
    assert!(proxy.generation("audit") > 3);

    stop.store(true, Ordering::Relaxed);
    probe.join().expect("probe");
    for (client, name) in clients.into_iter().zip(["orders", "payments"]) {
        let report = client.finish();
        assert_eq!(report["error_count"], 0, "{name}: {report}");
        assert_eq!(report["disconnects"], 0, "{name}: {report}");
        assert_eq!(report["lost"], 0, "{name}: {report}");
        assert!(report["acked"].as_u64().unwrap() > 100, "{name}: {report}");
    }
    // The unchanged clusters: same generation, no new connection.
    for (i, name) in ["orders", "payments"].into_iter().enumerate() {
        assert_eq!(
            (proxy.connections_accepted(name), proxy.generation(name)),
            before[i],
            "{name} noticed the reloads"
        );
    }
    assert_eq!(refused.load(Ordering::Relaxed), 0, "the SNI port refused");
    assert!(opened.load(Ordering::Relaxed) > 100);
    // New clients of an unchanged cluster still find it behind its names.
    let report = roundtrip("orders", "20");
    assert_eq!(report["unique"], 20, "{report}");
    proxy.assert_clean_logs();
}
