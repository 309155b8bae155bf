//! The watcher with the real proxy and real files: kubelet-style swaps,
//! plain-file edits, polling, invalid content, a proxy that is down, and the
//! per-pod stagger. The clusters point at an upstream nobody serves: reloads
//! need no broker.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sluice_testkit::config::{version, watched as config};
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::{Options, Proxy};
use sluice_testkit::rig::{AT_ONCE, Rig};
use sluice_testkit::volume::Volume;
use sluice_testkit::watcher::Watcher;

mod files;
mod upstream_ca;

const SECONDS_30: Duration = Duration::from_secs(30);

/// Versions the proxy logged as reloaded, with how often each was.
fn reloaded_versions(proxy: &Proxy) -> HashMap<String, usize> {
    let mut seen = HashMap::new();
    for line in proxy.logs() {
        if line.contains("\"message\":\"configuration reloaded\"") {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            *seen
                .entry(v["version"].as_str().unwrap().to_owned())
                .or_insert(0) += 1;
        }
    }
    seen
}

#[test]
fn two_hundred_kubelet_swaps_end_on_the_last_content_and_reload_no_version_twice() {
    let mut rig = Rig::start(&AT_ONCE);
    let mut last = String::new();
    let mut n = 0;
    for round in 0..100 {
        // Every fourth round is a burst of five swaps in a row.
        let burst = if round % 4 == 0 { 5 } else { 1 };
        for _ in 0..burst {
            n += 1;
            last = rig.config(n);
            rig.volume.swap(last.as_bytes());
        }
        if round % 4 != 0 {
            // Let single swaps land, so both paths are exercised.
            rig.proxy.wait_for_version(&version(&last), SECONDS_30);
        }
    }
    let Rig { proxy, watcher, .. } = &rig;
    assert!(n >= 200, "{n} swaps");
    proxy.wait_for_version(&version(&last), SECONDS_30);
    let reloaded = reloaded_versions(proxy);
    let twice: Vec<_> = reloaded.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "versions reloaded twice: {twice:?}");
    assert!(reloaded.contains_key(&version(&last)));
    assert!(watcher.metric("sluice_watcher_swaps_total") >= 30.0);
    assert_eq!(watcher.get("/healthz").status, 200);
    proxy.assert_clean_logs();
}

#[test]
fn an_invalid_swap_is_never_reloaded_and_the_next_valid_one_applies() {
    let mut rig = Rig::start(&AT_ONCE);
    let (first, good) = (rig.config(0), rig.config(7));
    let Rig {
        proxy,
        volume,
        watcher,
        ..
    } = &mut rig;

    volume.swap(first.replace("bootstrapPort", "bootstrapPrt").as_bytes());
    watcher.wait_for_log("configuration rejected by the proxy", SECONDS_30);
    assert_eq!(proxy.version(), version(&first));
    // It validated and stopped there: no reload request reached the proxy.
    assert_eq!(
        proxy.metric("sluice_config_reload_total{result=\"rejected\"}"),
        0.0
    );
    assert_eq!(
        proxy.metric("sluice_config_reload_total{result=\"applied\"}"),
        0.0
    );
    assert_eq!(
        watcher.metric("sluice_watcher_validation_rejections_total"),
        1.0
    );
    assert_eq!(watcher.get("/healthz").status, 200);

    volume.swap(good.as_bytes());
    proxy.wait_for_version(&version(&good), SECONDS_30);
    // The proxy runs it as soon as it commits; the watcher counts it once
    // the reload's answer is back, and logs it after counting.
    watcher.wait_for_log("configuration applied", SECONDS_30);
    assert_eq!(
        watcher.metric("sluice_watcher_reloads_total{result=\"applied\"}"),
        1.0
    );
    proxy.assert_clean_logs();
}

#[test]
fn a_swap_while_the_proxy_is_down_applies_once_it_is_back() {
    swap_while_the_proxy_is_down("TERM");
}

/// A swap while the proxy is down: the proxy is stopped with `signal`, the
/// file changes, the watcher retries, and once the proxy is back (with its
/// old configuration, on the same address) the watcher applies the new one.
pub(crate) fn swap_while_the_proxy_is_down(signal: &str) {
    let wait = Duration::from_secs(30);
    let (p, admin_port) = (ports(2), ports(1));
    let admin = format!("127.0.0.1:{admin_port}");
    let options = Options {
        admin_port: Some(admin_port),
        ..Options::default()
    };
    let first = config(&admin, p, 0);
    let mut proxy = Proxy::launch(tempfile::tempdir().expect("dir"), &first, &options);
    let dir = tempfile::tempdir().expect("dir");
    let mut volume = Volume::create(dir.path(), "proxy.yaml", first.as_bytes());
    let mut watcher = Watcher::start(&volume.path(), &admin, &AT_ONCE);
    proxy.process().signal(signal);
    assert!(
        proxy.process().wait_exit(wait).is_some(),
        "the proxy did not stop on SIG{signal}"
    );
    drop(proxy);
    let next = config(&admin, p, 1);
    volume.swap(next.as_bytes());
    watcher.wait_for_log("proxy call failed; retrying", wait);
    let proxy = Proxy::launch(tempfile::tempdir().expect("dir"), &first, &options);
    proxy.wait_for_version(&version(&next), wait);
    assert!(watcher.metric("sluice_watcher_retries_total") >= 1.0);
    proxy.assert_clean_logs();
}

#[test]
fn plain_file_edits_in_place_rename_over_and_delete_create_apply() {
    let p = ports(2);
    let proxy = Proxy::start(&config("{admin}", p, 0));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxy.yaml");
    std::fs::write(&file, proxy.render(&config("{admin}", p, 0))).unwrap();
    let _watcher = Watcher::start(&file, &proxy.admin, &AT_ONCE);

    let in_place = proxy.render(&config("{admin}", p, 1));
    std::fs::write(&file, &in_place).unwrap();
    proxy.wait_for_version(&version(&in_place), SECONDS_30);

    let renamed = proxy.render(&config("{admin}", p, 2));
    let tmp = dir.path().join(".proxy.yaml.swp");
    std::fs::write(&tmp, &renamed).unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    proxy.wait_for_version(&version(&renamed), SECONDS_30);

    let recreated = proxy.render(&config("{admin}", p, 3));
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, &recreated).unwrap();
    proxy.wait_for_version(&version(&recreated), SECONDS_30);
    proxy.assert_clean_logs();
}

#[test]
fn polling_mode_applies_changes_without_inotify() {
    let mut rig = Rig::start(&[
        "--poll",
        "--poll-interval",
        "100ms",
        "--stagger",
        "0s",
        "--jitter",
        "0s",
    ]);
    let next = rig.config(5);
    rig.volume.swap(next.as_bytes());
    rig.proxy.wait_for_version(&version(&next), SECONDS_30);
    rig.proxy.assert_clean_logs();
}

#[test]
fn slot_two_with_a_one_second_stagger_reloads_no_earlier_than_two_seconds() {
    let mut rig = Rig::start(&["--slot", "2", "--stagger", "1s", "--jitter", "0s"]);
    let next = rig.config(9);
    let swapped = Instant::now();
    rig.volume.swap(next.as_bytes());
    rig.proxy.wait_for_version(&version(&next), SECONDS_30);
    let took = swapped.elapsed();
    assert!(took >= Duration::from_secs(2), "applied after {took:?}");
    assert!(took < Duration::from_secs(10), "applied after {took:?}");
    rig.proxy.assert_clean_logs();
}
