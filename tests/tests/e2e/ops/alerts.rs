//! A real Prometheus (in the fleet's hub namespace, its own data directory,
//! 1 s scrapes and evaluations, the shipped rules with every `for:` cut to
//! 3 s) scrapes the three proxies and watchers of a fleet and a webhook: the
//! webhook's certificate, two days from expiry, fires both expiry alerts; a
//! version whose upstream does not answer halts the rollout and fires
//! SluiceRolloutHalted (pending, then firing) and SluiceReloadFailed; a
//! newer valid version rolls out and the halt alert resolves.

use std::process::Command;
use std::time::Duration;

use sluice_testkit::bin;
use sluice_testkit::certs::Ca;
use sluice_testkit::netns::{HUB, Net};
use sluice_testkit::process::Proc;
use sluice_tests::fleet::{ADMIN, Fleet, NAMES, WATCHER, broker, config};
use sluice_tests::prometheus::{
    Job, Prometheus, first_value, rules_holding_for, wait_for_alerts, webhook,
};

use crate::fleet::gated;

const PROMETHEUS: u16 = 9090;
const WEBHOOK: u16 = 8443;
const WEBHOOK_METRICS: u16 = 9091;

fn has(states: &[(String, String)], alert: &str, state: &str) -> bool {
    states.iter().any(|(a, s)| a == alert && s == state)
}

/// A webhook in the hub serving a certificate that expires in under two
/// days, its metrics on plain HTTP.
fn webhook_near_expiry(net: &Net, dir: &std::path::Path) -> Proc {
    // A day and a half: within both thresholds (14 and 2 days). Nothing
    // verifies its names (Prometheus scrapes the plain metrics port).
    let lifetime = Duration::from_secs(36 * 3600);
    let leaf = Ca::new("alerts test CA").server_expiring("sluice-webhook", 1, lifetime);
    webhook(
        net.command(&net.hub(), bin("sluice-webhook")),
        &format!("{HUB}:{WEBHOOK}"),
        &format!("{HUB}:{WEBHOOK_METRICS}"),
        leaf.write(dir, "tls.crt", "tls.key"),
    )
}

#[test]
fn a_halted_rollout_and_a_certificate_near_expiry_fire_and_the_halt_resolves() {
    let mut fleet = gated("0s", "10s");
    let dir = tempfile::tempdir().expect("temp dir");
    let _webhook = webhook_near_expiry(&fleet.net, dir.path());
    let pods = |port: u16| {
        (0..NAMES.len())
            .map(|i| format!("{}:{port}", Net::pod_addr(i)))
            .collect()
    };
    let jobs = [
        Job {
            name: "sluice-proxy",
            targets: pods(ADMIN),
        },
        Job {
            name: "sluice-watcher",
            targets: pods(WATCHER),
        },
        Job {
            name: "sluice-webhook",
            targets: vec![format!("{HUB}:{WEBHOOK_METRICS}")],
        },
    ];
    let hub = fleet.net.hub();
    let prometheus = Prometheus::start(
        |program| -> Command { fleet.net.command(&hub, program) },
        &format!("{HUB}:{PROMETHEUS}"),
        &jobs,
        &rules_holding_for("3s"),
        "1s",
    );
    let url = format!("{}/api/v1/alerts", prometheus.url);
    let alerts = |fleet: &Fleet| fleet.net.get(&hub, &url, Duration::from_secs(2));
    let minute = Duration::from_secs(60);
    // Every target answers its scrapes: three proxies, three watchers, the webhook.
    let up = format!("{}/api/v1/query?query=count(up%3D%3D1)", prometheus.url);
    fleet.wait("Prometheus to scrape all seven targets", minute, |f| {
        f.net
            .get(&hub, &up, Duration::from_secs(2))
            .and_then(|b| first_value(&b))
            == Some(7.0)
    });

    let seen = wait_for_alerts(
        "the certificate alerts to fire",
        minute,
        || alerts(&fleet),
        |now| {
            has(now, "SluiceCertificateExpiresIn14Days", "firing")
                && has(now, "SluiceCertificateExpiresIn2Days", "firing")
        },
    );
    assert!(
        !seen.iter().any(|(a, _)| a == "SluiceRolloutHalted"),
        "no halt before the bad version: {seen:?}"
    );

    // The broker's address, a port where nothing listens: the canary's
    // upstream check fails and the rollout halts.
    fleet.swap_all(&config(&format!("{HUB}:9"), 2));
    let seen = wait_for_alerts(
        "the halt to fire",
        minute,
        || alerts(&fleet),
        |now| has(now, "SluiceRolloutHalted", "firing") && has(now, "SluiceReloadFailed", "firing"),
    );
    assert!(
        has(&seen, "SluiceRolloutHalted", "pending"),
        "pending before firing (for: 3s): {seen:?}"
    );

    let good = fleet.swap_all(&config(&broker(), 3));
    fleet.wait("all three to run the fix", minute, |f| {
        (0..3).all(|i| f.runs(i, &good))
    });
    wait_for_alerts(
        "the halt to resolve",
        minute,
        || alerts(&fleet),
        |now| !now.iter().any(|(a, _)| a == "SluiceRolloutHalted"),
    );
    let errors: Vec<String> = prometheus
        .logs()
        .into_iter()
        .filter(|l| l.contains("level=error"))
        .collect();
    assert!(errors.is_empty(), "Prometheus logged errors: {errors:#?}");
}
