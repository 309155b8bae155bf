//! The proxy's credentials rotate like a certificate: a new password in a
//! Secret-style volume (kubelet's `..data` swap) is seen by the watcher,
//! validated, checked against the broker and swapped into the running
//! generation; nothing drains, and the broker port works again.

use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_testkit::volume::Volume;
use sluice_testkit::watcher::Watcher;
use sluice_tests::sasl::ScramTansu;

use super::{
    AUTH_CLOSED, PROXY_PASSWORD, PROXY_USER, assert_round_trip, config, refused_on_broker_port,
    round_trip,
};

#[test]
fn a_new_password_in_the_secret_is_applied_in_place_by_the_watcher() {
    let wrong = "expired-password-0b9d";
    let broker = ScramTansu::start(
        &[(PROXY_USER, PROXY_PASSWORD, "SCRAM-SHA-512")],
        &[("orders", 1)],
        None,
    );
    let dir = tempfile::tempdir().unwrap();
    let secret_dir = dir.path().join("secret");
    std::fs::create_dir(&secret_dir).unwrap();
    let pair = |password: &'static str| {
        [
            ("username", PROXY_USER.as_bytes()),
            ("password", password.as_bytes()),
        ]
    };
    let mut secret = Volume::create_files(&secret_dir, &pair(wrong));
    let sasl = format!(
        "      sasl: {{ mechanism: SCRAM-SHA-512, usernameFile: {}, passwordFile: {} }}\n",
        secret.file("username").display(),
        secret.file("password").display()
    );
    let base = ports(2);
    let mut proxy = Proxy::start(&config("orders", &broker.addr, base, &sasl, ""));
    proxy.allow("the upstream refused the proxy's own lookup");
    refused_on_broker_port(base);
    proxy.wait_for_metric(AUTH_CLOSED, 1.0, Duration::from_secs(10));
    let (before, generation) = (proxy.status(), proxy.clusters().clusters[0].generation);

    let text = proxy.render(&config("orders", &broker.addr, base, &sasl, ""));
    let config_dir = dir.path().join("config");
    std::fs::create_dir(&config_dir).unwrap();
    let volume = Volume::create(&config_dir, "proxy.yaml", text.as_bytes());
    let args = ["--stagger", "0s", "--jitter", "0s", "--resync", "1h"];
    let mut watcher = Watcher::start(&volume.path(), &proxy.admin, &args);
    secret.swap_files(&pair(PROXY_PASSWORD));
    watcher.wait_for_log("configuration applied", Duration::from_secs(30));

    let after = proxy.status();
    assert_eq!(after.current_config_version, before.current_config_version);
    assert_ne!(after.effective_version, before.effective_version);
    assert_eq!(proxy.clusters().clusters[0].generation, generation);
    assert_eq!(proxy.metric("sluice_drained_connections_total"), 0.0);
    let report = round_trip(&format!("127.0.0.1:{}", base + 1), "orders", 50, &[]);
    assert_round_trip(&report, 50, base + 1);
    let seen = format!("{}\n{}", proxy.logs().join("\n"), watcher.logs().join("\n"));
    for secret in [wrong, PROXY_PASSWORD] {
        assert!(!seen.contains(secret), "{secret:?} leaked");
    }
    proxy.assert_clean_logs();
}
