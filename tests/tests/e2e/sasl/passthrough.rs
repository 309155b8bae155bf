//! Clients' own SCRAM exchanges pass through the proxy untouched.

use sluice_testkit::certs;
use sluice_testkit::ports::{port, ports};
use sluice_testkit::proxy::Proxy;
use sluice_tests::peers::tls_terminator;
use sluice_tests::sasl::ScramTansu;

use super::{assert_requires_sasl, assert_round_trip, config, round_trip};

#[test]
fn scram_clients_produce_and_consume_with_a_group_through_the_proxy() {
    let broker = ScramTansu::start(&[], &[("orders", 2)], None);
    assert_requires_sasl(&broker.addr);
    let base = ports(2);
    let proxy = Proxy::start(&config("orders", &broker.addr, base, "", ""));

    let report = round_trip(&format!("127.0.0.1:{base}"), "orders", 200, &[]);
    assert_round_trip(&report, 200, base + 1);
    assert_eq!(report["consumed"], 200, "{report}");
    proxy.assert_clean_logs();
}

/// SASL_SSL: the client's TLS ends at the proxy, the proxy's own TLS goes
/// to the broker (an OpenSSL terminator in front of tansu), and the SCRAM
/// exchange rides inside both. The proxy authenticates its own lookup over
/// TLS too: the client starts on a broker port of a fresh proxy.
#[test]
fn sasl_ssl_clients_through_tls_both_ways_and_the_proxys_own_lookup_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let pki = certs::make(dir.path(), "sasl");
    let tls_port = port();
    let broker = ScramTansu::start(
        &[(super::PROXY_USER, super::PROXY_PASSWORD, "SCRAM-SHA-512")],
        &[("sealed", 1)],
        Some(&format!("127.0.0.1:{tls_port}")),
    );
    let _terminator = tls_terminator(tls_port, &pki.server_cert, &pki.server_key, &broker.addr);
    std::fs::write(dir.path().join("username"), super::PROXY_USER).unwrap();
    std::fs::write(dir.path().join("password"), super::PROXY_PASSWORD).unwrap();

    let base = ports(2);
    let upstream = "      tls: { caFile: ca.pem, serverName: localhost }\n      sasl: { mechanism: SCRAM-SHA-512, usernameFile: username, passwordFile: password }\n";
    let gateway = "      tls: { certFile: server.crt, keyFile: server.key }\n";
    let yaml = config(
        "sealed",
        &format!("127.0.0.1:{tls_port}"),
        base,
        upstream,
        gateway,
    );
    let proxy = Proxy::start_in(dir, &yaml);
    let ca = pki.ca.display().to_string();
    let report = round_trip(
        &format!("127.0.0.1:{}", base + 1),
        "sealed",
        100,
        &["--ssl", &ca, "-", "-"],
    );
    assert_round_trip(&report, 100, base + 1);
    assert_eq!(report["consumed"], 100, "{report}");
    proxy.assert_clean_logs();
}
