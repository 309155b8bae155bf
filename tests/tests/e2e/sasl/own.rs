//! The proxy's own lookup on a SASL cluster: a fresh proxy (it has learned
//! no broker yet, as after a restart or a rolling upgrade) and a client
//! whose first connection is to a broker port.

use std::time::Duration;

use sluice_testkit::http::Response;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::peers::TANSU_NODE_ID;
use sluice_tests::sasl::{PASSWORD, ScramTansu};

use super::{
    AUTH_CLOSED, PROXY_PASSWORD, PROXY_USER, assert_round_trip, config, refused_on_broker_port,
    round_trip,
};

/// A broker with the proxy's user, a fresh proxy in front of it with
/// `upstream_extra` (credential files written beside its configuration).
fn fresh(upstream_extra: &str, proxy_password: &str) -> (ScramTansu, Proxy, u16) {
    let users = [
        (PROXY_USER, PROXY_PASSWORD, "SCRAM-SHA-512"),
        (PROXY_USER_256, PROXY_PASSWORD, "SCRAM-SHA-256"),
    ];
    let broker = ScramTansu::start(&users, &[("orders", 1)], None);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("username"), format!("{PROXY_USER}\n")).unwrap();
    std::fs::write(dir.path().join("username-256"), PROXY_USER_256).unwrap();
    std::fs::write(dir.path().join("password"), format!("{proxy_password}\n")).unwrap();
    let base = ports(2);
    let extra = upstream_extra.replace("{broker}", &broker.addr);
    let proxy = Proxy::start_in(dir, &config("orders", &broker.addr, base, &extra, ""));
    (broker, proxy, base)
}

/// A user of the proxy's with a SCRAM-SHA-256 credential.
const PROXY_USER_256: &str = "sluice-proxy-256";

const SASL: &str =
    "      sasl: { mechanism: SCRAM-SHA-512, usernameFile: username, passwordFile: password }\n";

/// A reload adding cluster `second` in front of the same broker, with
/// `upstream_extra`: its upstream check runs first.
fn add_second(proxy: &Proxy, broker: &str, upstream_extra: &str) -> Response {
    let yaml = std::fs::read_to_string(&proxy.config).unwrap();
    let second = config("second", broker, ports(2), upstream_extra, "");
    let second = &second[second.find("  - name: second").unwrap()..];
    proxy.reload(&format!("{yaml}{second}"))
}

#[test]
fn with_upstream_sasl_a_client_starting_on_a_broker_port_produces() {
    let (_broker, proxy, base) = fresh(SASL, PROXY_PASSWORD);
    let report = round_trip(&format!("127.0.0.1:{}", base + 1), "orders", 100, &[]);
    assert_round_trip(&report, 100, base + 1);
    assert_eq!(proxy.metric(AUTH_CLOSED), 0.0);
    proxy.assert_clean_logs();
}

/// The proxy's own SCRAM-SHA-256 (its SHA-512 is the other tests').
#[test]
fn with_scram_sha_256_credentials_a_client_starting_on_a_broker_port_produces() {
    let sasl = SASL
        .replace("SHA-512", "SHA-256")
        .replace("usernameFile: username", "usernameFile: username-256");
    let (_broker, proxy, base) = fresh(&sasl, PROXY_PASSWORD);
    let report = round_trip(&format!("127.0.0.1:{}", base + 1), "orders", 20, &[]);
    assert_round_trip(&report, 20, base + 1);
    assert_eq!(proxy.metric(AUTH_CLOSED), 0.0);
    proxy.assert_clean_logs();
}

#[test]
fn with_upstream_nodes_a_client_starting_on_a_broker_port_produces() {
    let nodes = format!("      nodes: [{{ id: {TANSU_NODE_ID}, address: \"{{broker}}\" }}]\n");
    let (broker, mut proxy, base) = fresh(&nodes, PROXY_PASSWORD);
    let report = round_trip(&format!("127.0.0.1:{}", base + 1), "orders", 100, &[]);
    assert_round_trip(&report, 100, base + 1);
    assert_eq!(proxy.metric(AUTH_CLOSED), 0.0);
    // A reload's upstream check ends at ApiVersions, quietly: the brokers
    // are listed.
    let added = add_second(
        &proxy,
        &broker.addr,
        &nodes.replace("{broker}", &broker.addr),
    );
    assert_eq!(added.status, 200, "{}", added.body);
    proxy.wait_for_log("upstream.nodes lists the brokers", Duration::from_secs(10));
    proxy.assert_clean_logs();
}

#[test]
fn with_neither_the_lookup_fails_naming_sasl_and_both_ways_out() {
    let (broker, mut proxy, base) = fresh("", PROXY_PASSWORD);
    proxy.allow("the upstream refused the proxy's own lookup");
    proxy.allow("upstream check ended after ApiVersions");
    refused_on_broker_port(base);
    proxy.wait_for_metric(AUTH_CLOSED, 1.0, Duration::from_secs(10));
    let line = proxy.wait_for_log("requires SASL authentication", Duration::from_secs(10));
    for needle in [
        "virtual cluster orders",
        "upstream.sasl",
        "upstream.nodes",
        "WARN",
    ] {
        assert!(line.contains(needle), "{needle:?} missing from {line}");
    }
    // A reload's upstream check passes at ApiVersions, with a warning that
    // names both ways out.
    let added = add_second(&proxy, &broker.addr, "");
    assert_eq!(added.status, 200, "{}", added.body);
    let warning = proxy.wait_for_log(
        "upstream check ended after ApiVersions",
        Duration::from_secs(10),
    );
    assert!(
        warning.contains("without upstream.sasl or upstream.nodes"),
        "{warning}"
    );
    proxy.assert_clean_logs();
}

#[test]
fn wrong_credentials_are_named_never_shown_and_a_rotated_password_applies() {
    let wrong = "wrong-password-c4f1e2";
    let (broker, mut proxy, base) = fresh(SASL, wrong);
    proxy.allow("the upstream refused the proxy's own lookup");
    proxy.allow("upstream check failed");
    proxy.allow("reload failed");
    refused_on_broker_port(base);
    proxy.wait_for_metric(AUTH_CLOSED, 1.0, Duration::from_secs(10));
    let line = proxy.wait_for_log(
        "authentication of the proxy's own connection",
        Duration::from_secs(10),
    );
    for needle in ["virtual cluster orders", "SASL SCRAM-SHA-512"] {
        assert!(line.contains(needle), "{needle:?} missing from {line}");
    }

    // A reload's upstream check authenticates too: a new cluster with the
    // same wrong credentials fails it, with nothing changed.
    let before = proxy.version();
    let yaml = std::fs::read_to_string(&proxy.config).unwrap();
    let failed = add_second(&proxy, &broker.addr, SASL);
    assert_eq!(failed.status, 500, "{}", failed.body);
    assert!(
        failed
            .body
            .contains("SASL SCRAM-SHA-512 authentication of the proxy failed"),
        "{}",
        failed.body
    );
    assert_eq!(proxy.version(), before);

    // The password is nowhere: logs, status, clusters, metrics, the
    // configuration served back, the failed reload's answer.
    let mut seen = proxy.logs().join("\n");
    for path in [
        "/admin/config/status",
        "/admin/clusters",
        "/metrics",
        "/admin/config",
    ] {
        seen.push_str(&proxy.get(path).body);
    }
    seen.push_str(&failed.body);
    for secret in [wrong, PROXY_PASSWORD, PASSWORD] {
        assert!(!seen.contains(secret), "the password {secret:?} leaked");
    }

    // The right password, rotated in by a reload of the same bytes: the
    // check authenticates with it, the running generation takes it (no
    // drain), and the broker port works.
    let generation = proxy.clusters().clusters[0].generation;
    std::fs::write(proxy.dir().join("password"), PROXY_PASSWORD).unwrap();
    let applied = proxy.reload(&yaml);
    assert_eq!(applied.status, 200, "{}", applied.body);
    assert_eq!(proxy.clusters().clusters[0].generation, generation);
    let report = round_trip(&format!("127.0.0.1:{}", base + 1), "orders", 50, &[]);
    assert_round_trip(&report, 50, base + 1);
    let seen = proxy.logs().join("\n");
    assert!(!seen.contains(PROXY_PASSWORD), "the new password leaked");
    proxy.assert_clean_logs();
}
