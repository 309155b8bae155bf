//! KIP-368 on a connection the proxy authenticated itself: with
//! `sessionLifetime`, a client re-authenticates on its connection (the
//! proxy answers, and the upstream never sees it), and one that does not is
//! closed at its first request after the session ended. A raw client
//! (`reauth.py`, SCRAM-SHA-512 written with the standard library, checking
//! the proxy's signature) and librdkafka, which re-authenticates by itself.

use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::pinned;
use sluice_tests::peers::Tansu;
use sluice_tests::python::{self, Steady};

use super::credentials;

#[test]
fn a_session_is_renewed_by_re_authenticating_and_ends_without_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("users.scram"),
        credentials("alice", "alice-pw"),
    )
    .unwrap();
    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    let base = ports(2);
    let sasl = "    authentication:
      sasl: { mechanisms: [SCRAM-SHA-512], credentialsFile: users.scram, sessionLifetime: 10s }
";
    let config = pinned("terminated", base, &tansu.addr, "", sasl);
    let proxy = Proxy::start_in(dir, &config);
    let bootstrap = format!("127.0.0.1:{base}");
    // librdkafka re-authenticates before the session ends (it runs past
    // the first lifetime), without a disconnect.
    let steady = Steady::start_sasl(
        &bootstrap,
        "orders",
        "g",
        ["SCRAM-SHA-512", "alice", "alice-pw"],
    );

    // Raw: authenticated, re-authenticated on the same connection (each
    // step answered, the proxy's signature checked), then idle past the
    // lifetime: closed at the next request.
    let args = [&bootstrap[..], "alice", "alice-pw", "--idle", "11"];
    let raw = python::run_json("reauth.py", &args, Duration::from_secs(60));
    let steps: Vec<(String, i64)> = serde_json::from_value(raw["steps"].clone()).unwrap();
    let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "ApiVersions",
            "SaslHandshake",
            "SaslAuthenticate",
            "SaslAuthenticate",
            "Metadata",
            "SaslHandshake",
            "SaslAuthenticate",
            "SaslAuthenticate",
            "closed"
        ],
        "{raw}"
    );
    for (name, code) in &steps[..8] {
        if name != "Metadata" {
            assert_eq!(*code, 0, "{raw}");
        }
    }
    let expired = "sluice_connections_closed_on_error_total{cluster=\"terminated\",reason=\"authentication\"}";
    assert!(proxy.metric(expired) >= 1.0);

    let report = steady.finish();
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["disconnects"], 0, "{report}");
    assert_eq!(report["lost"], 0, "{report}");
    proxy.assert_clean_logs();
}
