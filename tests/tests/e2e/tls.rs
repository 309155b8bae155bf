//! TLS both ways with certificates made for the run: clients (librdkafka,
//! OpenSSL) to the proxy with mTLS, and the proxy to the broker through an
//! OpenSSL terminator (socat) in front of tansu.

use std::process::Command;
use std::time::Duration;

use sluice_testkit::certs;
use sluice_testkit::ports::{port, ports};
use sluice_testkit::proxy::Proxy;
use sluice_tests::peers::{TANSU_NODE_ID, Tansu, tls_terminator};
use sluice_tests::python;

#[test]
fn tls_to_clients_with_mtls_and_tls_to_the_broker() {
    let dir = tempfile::tempdir().unwrap();
    let pki = certs::make(dir.path(), "one");

    // tansu advertises the TLS terminator's address, so every upstream
    // connection the proxy makes is TLS.
    let tls_port = port();
    let tansu = Tansu::start_advertising(Some(&format!("127.0.0.1:{tls_port}")));
    let _terminator = tls_terminator(tls_port, &pki.server_cert, &pki.server_key, &tansu.addr);

    let base = ports(2);
    let config = format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: secure\n    upstream:\n      bootstrapServers: [\"127.0.0.1:{tls_port}\"]\n      tls: {{ caFile: ca.pem, serverName: localhost }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }}\n      tls: {{ certFile: server.crt, keyFile: server.key, clientCaFile: ca.pem }}\n",
        base + 1
    );
    let mut proxy = Proxy::start_in(dir, &config);
    proxy.allow("client tls handshake");
    let bootstrap = format!("127.0.0.1:{base}");
    let ca = pki.ca.display().to_string();
    let cert = pki.client_cert.display().to_string();
    let key = pki.client_key.display().to_string();

    // Create the topic through the proxy (over both TLS legs), then round trip.
    let created = python::run_json(
        "admin.py",
        &[
            &bootstrap,
            "create-topic",
            "sealed",
            "2",
            "--ssl",
            &ca,
            &cert,
            &key,
        ],
        Duration::from_secs(60),
    );
    assert_eq!(created["sealed"]["ok"], true, "{created}");
    let report = python::run_json(
        "roundtrip.py",
        &[
            &bootstrap, "sealed", "200", "tls", "--ssl", &ca, &cert, &key,
        ],
        Duration::from_secs(90),
    );
    assert_eq!(report["unique"], 200, "{report}");
    assert_eq!(report["consumed"], 200, "{report}");
    assert_eq!(
        report["brokers"],
        serde_json::json!([[TANSU_NODE_ID, "127.0.0.1", base + 1]])
    );

    // A client without a certificate is refused by the handshake.
    let refused = python::run_json("tls_probe.py", &[&bootstrap, &ca], Duration::from_secs(30));
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        proxy.metric("sluice_connections_closed_on_error_total{cluster=\"secure\",reason=\"tls\"}")
            >= 1.0
    );
    let accepted = python::run_json(
        "tls_probe.py",
        &[&bootstrap, &ca, &cert, &key],
        Duration::from_secs(30),
    );
    assert_eq!(accepted["ok"], true, "{accepted}");
    proxy.assert_clean_logs();
}

/// TLS 1.1 is refused by the proxy's listener; TLS 1.2 and 1.3 are accepted.
/// OpenSSL's `s_client` is the peer, with its security level lowered so that
/// it offers TLS 1.1 at all (the refusal must come from the proxy).
#[test]
fn tls_versions_below_1_2_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pki = certs::make(dir.path(), "versions");
    let base = ports(2);
    let config = format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: v\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: 1 }}\n      tls: {{ certFile: server.crt, keyFile: server.key }}\n",
        base + 1
    );
    let mut proxy = Proxy::start_in(dir, &config);
    proxy.allow("client tls handshake");
    // After a successful handshake the proxy looks for the (absent) broker.
    proxy.allow("bootstrap server unreachable");
    let handshake = |version: &str| {
        let out = Command::new("openssl")
            .args([
                "s_client",
                "-connect",
                &format!("127.0.0.1:{base}"),
                version,
                "-cipher",
                "DEFAULT@SECLEVEL=0",
            ])
            .arg("-CAfile")
            .arg(&pki.ca)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run openssl s_client");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        // The exit status also reflects the proxy closing the connection
        // afterwards (no broker here), so the handshake is judged by its report.
        let negotiated =
            text.contains("Verify return code: 0 (ok)") && !text.contains("Cipher is (NONE)");
        (negotiated, text)
    };
    let (ok, text) = handshake("-tls1_1");
    assert!(!ok, "TLS 1.1 was accepted:\n{text}");
    assert!(
        text.contains("protocol version") || text.contains("alert"),
        "{text}"
    );
    for version in ["-tls1_2", "-tls1_3"] {
        let (ok, text) = handshake(version);
        assert!(ok, "{version}:\n{text}");
    }
    proxy.assert_clean_logs();
}
