//! A real Prometheus (in the fleet's hub namespace, its own data directory,
//! 1 s scrapes and evaluations, the shipped rules with every `for:` cut to
//! 3 s) scrapes the three proxies and watchers of a fleet, a webhook and a
//! fourth proxy serving TLS: the webhook's certificate and the fourth
//! proxy's gateway certificate, a day and a half from expiry, fire both
//! expiry alerts; a version whose upstream does not answer halts the rollout
//! and fires SluiceRolloutHalted (pending, then firing) and
//! SluiceReloadFailed; a newer valid version rolls out and the halt alert
//! resolves.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use sluice_testkit::bin;
use sluice_testkit::certs::{Ca, Leaf};
use sluice_testkit::netns::{HUB, Net};
use sluice_testkit::process::Proc;
use sluice_tests::fleet::{ADMIN, Fleet, NAMES, WATCHER, broker, config};
use sluice_tests::prometheus::{
    Alert, Job, Prometheus, first_value, rules_holding_for, wait_for_alerts, webhook,
};

use crate::fleet::gated;

const PROMETHEUS: u16 = 9090;
const WEBHOOK: u16 = 8443;
const WEBHOOK_METRICS: u16 = 9091;

const TLS_PROXY_ADMIN: &str = "127.0.0.1:9290";

fn has(alerts: &[Alert], name: &str, state: &str) -> bool {
    alerts.iter().any(|a| a.name == name && a.state == state)
}

/// Who fires `name`: the proxy certificate's role, or `webhook`.
fn firing_for(alerts: &[Alert], name: &str) -> BTreeSet<String> {
    alerts
        .iter()
        .filter(|a| a.name == name && a.state == "firing")
        .map(|a| {
            a.labels
                .get("role")
                .map_or("webhook", String::as_str)
                .to_owned()
        })
        .collect()
}

/// A day and a half: within both thresholds (14 and 2 days). Nothing
/// verifies the names (Prometheus scrapes plain HTTP).
fn near_expiry(ca: &Ca, name: &str) -> Leaf {
    ca.server_expiring(name, 1, Duration::from_secs(36 * 3600))
}

/// A proxy in the hub whose one cluster's gateway serves a certificate
/// near expiry (its admin API, and so its metrics, on the hub's loopback).
fn tls_proxy_near_expiry(net: &Net, dir: &Path) -> Proc {
    let (cert, key) = near_expiry(&Ca::new("gateway CA"), "gateway").write(dir, "gw.crt", "gw.key");
    let config = format!(
        "admin: {{ listen: \"{TLS_PROXY_ADMIN}\" }}\nvirtualClusters:\n  - name: edge\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"], checkOnReload: false }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: 29092, brokerPorts: {{ start: 29093, count: 1 }}, tls: {{ certFile: {}, keyFile: {} }} }}\n",
        cert.display(),
        key.display()
    );
    let path = dir.join("tls-proxy.yaml");
    std::fs::write(&path, config).expect("write config");
    let mut cmd = net.command(&net.hub(), bin("sluice-proxy"));
    cmd.arg("run").arg("--config").arg(path);
    let mut proxy = Proc::spawn("sluice-proxy (TLS)", cmd);
    proxy.wait_for_line("sluice-proxy ready", Duration::from_secs(30));
    proxy
}

/// A webhook in the hub serving a certificate near expiry, its metrics on
/// plain HTTP.
fn webhook_near_expiry(net: &Net, dir: &Path) -> Proc {
    let leaf = near_expiry(&Ca::new("webhook CA"), "sluice-webhook");
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
    let _tls_proxy = tls_proxy_near_expiry(&fleet.net, dir.path());
    let pods = |port: u16| {
        (0..NAMES.len())
            .map(|i| format!("{}:{port}", Net::pod_addr(i)))
            .collect()
    };
    let mut proxies: Vec<String> = pods(ADMIN);
    proxies.push(TLS_PROXY_ADMIN.to_owned());
    let jobs = [
        Job {
            name: "sluice-proxy",
            targets: proxies,
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
    // Every target answers its scrapes: four proxies, three watchers, the webhook.
    let up = format!("{}/api/v1/query?query=count(up%3D%3D1)", prometheus.url);
    fleet.wait("Prometheus to scrape all eight targets", minute, |f| {
        f.net
            .get(&hub, &up, Duration::from_secs(2))
            .and_then(|b| first_value(&b))
            == Some(8.0)
    });

    let seen = wait_for_alerts(
        "the certificate alerts to fire",
        minute,
        || alerts(&fleet),
        |now| {
            [
                "SluiceCertificateExpiresIn14Days",
                "SluiceCertificateExpiresIn2Days",
            ]
            .iter()
            .all(|name| {
                firing_for(now, name) == BTreeSet::from(["gateway".into(), "webhook".into()])
            })
        },
    );
    assert!(
        !seen.iter().any(|a| a.name == "SluiceRolloutHalted"),
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
        |now| !now.iter().any(|a| a.name == "SluiceRolloutHalted"),
    );
    let errors: Vec<String> = prometheus
        .logs()
        .into_iter()
        .filter(|l| l.contains("level=error"))
        .collect();
    assert!(errors.is_empty(), "Prometheus logged errors: {errors:#?}");
}
