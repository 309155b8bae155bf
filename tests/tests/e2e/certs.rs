//! Certificate expiry you can alert on (the certificate issue): the proxy's
//! gauge per cluster and role, its warning log within 14 days, `check`'s
//! warning (exit 0), and the series following reloads.

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_testkit::bin;
use sluice_testkit::certs::Ca;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;

fn config(port: u16, gateway_tls: &str) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: a\n    upstream: {{ bootstrapServers: [127.0.0.1:9], checkOnReload: false, tls: {{ caFile: ca.pem }} }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }}{gateway_tls} }}\n",
        port + 1
    )
}

const TLS: &str = ", tls: { certFile: server.crt, keyFile: server.key }";

fn gauge(role: &str) -> String {
    format!("sluice_tls_certificate_expiry_timestamp_seconds{{cluster=\"a\",role=\"{role}\"}}")
}

#[test]
fn a_certificate_close_to_expiry_is_a_gauge_a_warning_and_a_check_warning() {
    let port = ports(2);
    let dir = tempfile::tempdir().expect("dir");
    let ca = Ca::new("expiry");
    ca.write(dir.path(), "ca.pem");
    let five_days = Duration::from_secs(5 * 86_400);
    ca.server_expiring("soon", 5, five_days)
        .write(dir.path(), "server.crt", "server.key");
    let expected = SystemTime::now() + five_days;

    // `check` warns and still says valid.
    let file = dir.path().join("check.yaml");
    std::fs::write(&file, config(port, TLS).replace("{admin}", "127.0.0.1:1")).expect("write");
    let out = Command::new(bin("sluice-proxy"))
        .arg("check")
        .arg(&file)
        .output()
        .expect("check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("gateway certificate expires"), "{stderr}");
    assert!(stderr.contains("day(s)"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("valid"));

    let mut proxy = Proxy::start_in(dir, &config(port, TLS));
    proxy.allow("certificate expires");
    proxy.wait_for_log("certificate expires", Duration::from_secs(10));
    let at = proxy.metric(&gauge("gateway"));
    let wanted = expected
        .duration_since(UNIX_EPOCH)
        .expect("epoch")
        .as_secs_f64();
    assert!(
        (at - wanted).abs() < 120.0,
        "gateway expiry {at}, wanted about {wanted}"
    );
    // The CA (rcgen's default validity) is far off: a series, no warning.
    assert!(proxy.metric(&gauge("upstream-ca")) > wanted + 86_400.0 * 365.0);

    // Without gateway TLS, its series goes.
    let answer = proxy.reload(&config(port, ""));
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(proxy.metric(&gauge("gateway")), 0.0);
    assert!(proxy.metric(&gauge("upstream-ca")) > 0.0);
}
