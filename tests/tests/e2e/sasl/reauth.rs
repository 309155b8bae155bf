//! KIP-368: a client re-authenticates on its live connection with a second
//! SaslHandshake and SaslAuthenticate. tansu 0.6.0 announces a session
//! lifetime (60 s) but answers a second handshake on a connection with
//! UNSUPPORTED_SASL_MECHANISM (33), and the SaslAuthenticate after it with
//! ILLEGAL_SASL_STATE (34), so a real re-authentication cannot succeed
//! against it, through the proxy or not. What is tested is the proxy's
//! part: a second exchange on a live connection reaches the broker, and the
//! broker's own answers reach the client on the same connection, exactly as
//! on a direct one (`tests/clients/reauth.py` drives it).

use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::python;
use sluice_tests::sasl::{PASSWORD, ScramTansu, USER};

use super::config;

/// `reauth.py`: SCRAM-SHA-512, Metadata, SCRAM again, on one connection.
fn twice(addr: &str) -> serde_json::Value {
    python::run_json(
        "reauth.py",
        &[addr, USER, PASSWORD],
        Duration::from_secs(30),
    )["steps"]
        .clone()
}

#[test]
fn a_second_authentication_on_a_live_connection_passes_through() {
    let broker = ScramTansu::start(&[], &[], None);
    let base = ports(2);
    let proxy = Proxy::start(&config("orders", &broker.addr, base, "", ""));
    let direct = twice(&broker.addr);
    // Authenticated (the broker's signature verified), then Metadata lists
    // the one broker; what tansu answers the second exchange follows.
    assert_eq!(
        direct.as_array().unwrap()[..5],
        serde_json::json!([
            ["ApiVersions", 0],
            ["SaslHandshake", 0],
            ["SaslAuthenticate", 0],
            ["SaslAuthenticate", 0],
            ["Metadata", 1]
        ])
        .as_array()
        .unwrap()[..],
        "{direct}"
    );
    let proxied = twice(&format!("127.0.0.1:{base}"));
    assert_eq!(proxied, direct);
    let api = |name: &str| format!("sluice_requests_total{{cluster=\"orders\",api=\"{name}\"}}");
    assert_eq!(proxy.metric(&api("SaslHandshake")), 2.0);
    assert_eq!(proxy.metric(&api("SaslAuthenticate")), 3.0);
    assert_eq!(
        proxy.metric("sluice_connections_total{cluster=\"orders\"}"),
        1.0
    );
    proxy.assert_clean_logs();
}
