//! The quota filter with a real client (librdkafka) in front of tansu: a
//! producer offering 10 MB/s against a per-client quota of 2 MB/s settles
//! within 10% of 2 MB/s, with no error and visible throttling
//! (`throttle_time_ms` in its statistics, `sluice_throttle_seconds_total`,
//! and the requests it had pipelined held by the proxy,
//! `sluice_quota_held_seconds_total`); a second client id on the same
//! cluster, under its quota, is unaffected.
//! A quota added, tightened and removed under a steady producer and
//! consumer group applies to the open connections from their next request:
//! no new generation, no disconnect, no error, nothing lost.

use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::{tansu_cluster, with_drain};
use sluice_tests::peers::Tansu;
use sluice_tests::python::{self, Steady};

const QUOTA: f64 = 2.0 * 1024.0 * 1024.0;
const OFFERED: f64 = 10.0 * 1024.0 * 1024.0;
const LIGHT: f64 = 256.0 * 1024.0;
/// How long the producers run, and from when their rate is measured: about
/// a second's worth of a quota passes at first, then the quota itself, so
/// the rate is averaged over the twenty seconds after a few.
const SECONDS: &str = "25";
const SETTLE: &str = "5";

#[test]
fn a_producer_over_its_quota_settles_at_it_and_another_client_is_unaffected() {
    let tansu = Tansu::start();
    tansu.create_topic("quota", 1);
    let base = ports(2);
    let filter = format!(
        "    filters:\n      - type: quota\n        config: {{ perClientId: {{ produceBytesPerSecond: {} }} }}\n",
        QUOTA as u64
    );
    let proxy = Proxy::start(&with_drain(
        "1s",
        &[tansu_cluster("quota", &tansu.addr, base, &filter)],
    ));
    let bootstrap = format!("127.0.0.1:{base}");
    let (heavy, light) = (format!("heavy:{OFFERED}"), format!("light:{LIGHT}"));
    let report = python::run_json(
        "quota_load.py",
        &[&bootstrap, "quota", SECONDS, SETTLE, &heavy, &light],
        Duration::from_secs(120),
    );
    eprintln!("quota: {report}");
    for client in ["heavy", "light"] {
        assert_eq!(report[client]["error_count"], 0, "{client}: {report}");
    }
    let rate = |client: &str| report[client]["rate"].as_f64().expect("rate");
    let heavy_rate = rate("heavy");
    assert!(
        (heavy_rate - QUOTA).abs() <= 0.1 * QUOTA,
        "the heavy producer settled at {heavy_rate:.0} B/s, not within 10% of {QUOTA} B/s"
    );
    assert!(
        report["heavy"]["throttle_max_ms"].as_f64() > Some(0.0),
        "the heavy producer saw no throttle_time_ms: {report}"
    );
    let light_rate = rate("light");
    assert!(
        (light_rate - LIGHT).abs() <= 0.1 * LIGHT,
        "the light producer got {light_rate:.0} B/s of the {LIGHT} it offered"
    );
    assert_eq!(report["light"]["throttle_max_ms"], 0, "{report}");
    let throttled =
        proxy.metric("sluice_throttle_seconds_total{cluster=\"quota\",kind=\"produce\"}");
    assert!(throttled > 1.0, "throttled for {throttled} s in all");
    // librdkafka has several requests in flight: those sent before the
    // throttle time reached it are held in their turn, without an error.
    let held = proxy.metric("sluice_quota_held_seconds_total{cluster=\"quota\",kind=\"produce\"}");
    eprintln!("quota: throttled {throttled:.1} s, held {held:.1} s");
    // Measured at the scrape, of the busiest client id's bucket: the heavy
    // producer's, held near its quota (the last seconds' flush included).
    let usage = proxy.metric("sluice_quota_usage_ratio{cluster=\"quota\",kind=\"produce\"}");
    assert!((0.5..=1.5).contains(&usage), "usage ratio {usage}");
}

fn quota(config: &str) -> String {
    format!("    filters:\n      - type: quota\n        config: {config}\n")
}

#[test]
fn a_quota_added_tightened_and_removed_applies_in_place_to_open_connections() {
    let tansu = Tansu::start();
    tansu.create_topic("live", 1);
    let base = ports(2);
    let config =
        |filters: &str| with_drain("3s", &[tansu_cluster("live", &tansu.addr, base, filters)]);
    let proxy = Proxy::start(&config(""));
    let clients = Steady::start(&format!("127.0.0.1:{base}"), "live", "live-group", true);
    // librdkafka's default client id.
    let counted =
        "sluice_quota_bytes_total{cluster=\"live\",client_id=\"rdkafka\",kind=\"produce\"}";
    let throttled = "sluice_throttle_seconds_total{cluster=\"live\",kind=\"produce\"}";
    let produces = "sluice_requests_total{cluster=\"live\",api=\"Produce\"}";
    let reload = |filters: &str| {
        let r = proxy.reload(&config(filters));
        assert_eq!(r.status, 200, "{}", r.body);
    };
    assert_eq!(proxy.metric(counted), 0.0);
    // Added, far above what the producer sends: its next requests count.
    reload(&quota("{ produceBytesPerSecond: 104857600 }"));
    proxy.wait_for_metric(counted, 1.0, Duration::from_secs(10));
    assert_eq!(proxy.metric(throttled), 0.0);
    // Tightened below it: the same connection is throttled, with what it
    // sent under the first quota still counted.
    reload(&quota("{ produceBytesPerSecond: 1024 }"));
    proxy.wait_for_metric(throttled, 0.1, Duration::from_secs(10));
    // Removed: once the mute is over, requests flow and are not counted.
    reload("");
    let at = proxy.metric(counted);
    let sent = proxy.metric(produces);
    proxy.wait_for_metric(produces, sent + 50.0, Duration::from_secs(20));
    assert_eq!(
        proxy.metric(counted),
        at,
        "counted after the quota was removed"
    );
    let clusters = proxy.get("/admin/clusters").json();
    assert_eq!(clusters["clusters"][0]["generation"], 1, "{clusters}");
    let report = clients.finish();
    assert!(report["acked"].as_u64() > Some(100), "{report}");
    assert_eq!(report["lost"], 0, "{report}");
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["disconnects"], 0, "{report}");
    assert_eq!(
        proxy.metric("sluice_drained_connections_total{cluster=\"live\",result=\"clean\"}"),
        0.0
    );
    proxy.assert_clean_logs();
}
