//! Faults with real processes: a broker that goes down and comes back
//! mid-stream, a proxy killed while the watcher retries, a watcher killed and
//! restarted, a watched directory removed and recreated.

use std::time::Duration;

use sluice_tests::config::{version, watched as reloadable};
use sluice_tests::peers::MockCluster;
use sluice_tests::ports::ports;
use sluice_tests::proxy::Proxy;
use sluice_tests::python::Steady;
use sluice_tests::volume::Volume;
use sluice_tests::watcher::{self, Watcher};

const SECONDS_30: Duration = Duration::from_secs(30);

#[test]
fn a_broker_down_and_back_mid_stream_loses_nothing_and_the_proxy_stays_up() {
    let mut mock = MockCluster::start(3, &["flow:3"]);
    let base = ports(4);
    let config = format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: m\n    upstream: {{ bootstrapServers: [\"{}\"] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {base}, brokerPorts: {{ start: {}, count: 3, firstNodeId: 1 }} }}\n",
        mock.brokers[0],
        base + 1
    );
    let mut proxy = Proxy::start(&config);
    // A broker going away is reported by the proxy as it should be.
    proxy.allow("connection closed");
    proxy.allow("bootstrap server unreachable");
    let clients = Steady::start(&format!("127.0.0.1:{base}"), "flow", "flow-group", true);
    mock.set_broker(2, false);
    // Keep producing while it is down, then bring it back.
    std::thread::sleep(Duration::from_secs(2));
    mock.set_broker(2, true);
    std::thread::sleep(Duration::from_secs(2));
    let report = clients.finish();
    assert_eq!(report["lost"], 0, "{report}");
    assert!(report["acked"].as_u64().unwrap() > 100, "{report}");
    assert_eq!(proxy.get("/admin/health").status, 200);
    assert_eq!(proxy.get("/admin/ready").status, 200);
    proxy.assert_clean_logs();
}

#[test]
fn a_proxy_killed_while_the_watcher_retries_gets_the_pending_version_when_back() {
    watcher::swap_while_the_proxy_is_down("KILL");
}

#[test]
fn a_restarted_watcher_reconciles_at_startup() {
    let p = ports(2);
    let proxy = Proxy::start(&reloadable("{admin}", p, 0));
    let dir = tempfile::tempdir().unwrap();
    let mut volume = Volume::create(
        dir.path(),
        "proxy.yaml",
        proxy.render(&reloadable("{admin}", p, 0)).as_bytes(),
    );
    let mut watcher = Watcher::start(
        &volume.path(),
        &proxy.admin,
        &["--stagger", "0s", "--jitter", "0s"],
    );
    watcher.process().signal("KILL");
    assert!(watcher.process().wait_exit(SECONDS_30).is_some());
    drop(watcher);
    // Changed while no watcher ran.
    let next = proxy.render(&reloadable("{admin}", p, 4));
    volume.swap(next.as_bytes());
    let _watcher = Watcher::start(
        &volume.path(),
        &proxy.admin,
        &["--stagger", "5s", "--jitter", "0s", "--slot", "3"],
    );
    // Startup reconciles at once, without the 15 s stagger.
    proxy.wait_for_version(&version(&next), Duration::from_secs(10));
    proxy.assert_clean_logs();
}

#[test]
fn a_watched_directory_removed_and_recreated_is_picked_up_again() {
    let p = ports(2);
    let proxy = Proxy::start(&reloadable("{admin}", p, 0));
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("conf");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("proxy.yaml");
    std::fs::write(&file, proxy.render(&reloadable("{admin}", p, 0))).unwrap();
    let _watcher = Watcher::start(
        &file,
        &proxy.admin,
        &["--stagger", "0s", "--jitter", "0s", "--resync", "1s"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    let next = proxy.render(&reloadable("{admin}", p, 8));
    std::fs::write(&file, &next).unwrap();
    proxy.wait_for_version(&version(&next), SECONDS_30);
    // And later edits are seen too.
    let later = proxy.render(&reloadable("{admin}", p, 9));
    std::fs::write(&file, &later).unwrap();
    proxy.wait_for_version(&version(&later), SECONDS_30);
    proxy.assert_clean_logs();
}

#[test]
fn an_inotify_queue_overflow_still_ends_on_the_newest_content() {
    let p = ports(2);
    let proxy = Proxy::start(&reloadable("{admin}", p, 0));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxy.yaml");
    std::fs::write(&file, proxy.render(&reloadable("{admin}", p, 0))).unwrap();
    let _watcher = Watcher::start(&file, &proxy.admin, &["--stagger", "0s", "--jitter", "0s"]);
    // More events than inotify queues by default (16,384), then the change.
    let noise = dir.path().join("noise");
    std::fs::create_dir(&noise).unwrap();
    for i in 0..20_000 {
        std::fs::write(dir.path().join(format!("n{i}")), b"").unwrap();
    }
    let next = proxy.render(&reloadable("{admin}", p, 5));
    std::fs::write(&file, &next).unwrap();
    proxy.wait_for_version(&version(&next), SECONDS_30);
    proxy.assert_clean_logs();
}
