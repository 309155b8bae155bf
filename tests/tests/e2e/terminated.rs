//! SASL terminated by the proxy (`authentication.sasl`) in front of a
//! plaintext tansu that authenticates no one: the proxy answers
//! ApiVersions, SaslHandshake and SaslAuthenticate itself, against a
//! credentials file that `sluice-proxy scram-credential` wrote, and the
//! user is the principal a topic policy judges. With librdkafka and
//! kafka-python: each user gets its own rights; a wrong password and an
//! unknown user get the same answer, and open no connection to the broker
//! (a relay in front of tansu counts them). A user taken out of the file by
//! a reload loses its connections; the others see nothing. Raw frames get
//! nothing past it.

mod lifetime;
mod oauth;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use sluice_testkit::bin;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::audit::audit_lines;
use sluice_tests::config::{BY_PRINCIPAL, assert_rights_by_principal, pinned};
use sluice_tests::peers::Tansu;
use sluice_tests::python::{self, Steady};
use sluice_tests::relay::CountingRelay;

/// `user`'s lines of the credentials file, from the subcommand, the
/// password on its standard input.
pub(crate) fn credentials(user: &str, password: &str) -> String {
    let mut child = Command::new(bin("sluice-proxy"))
        .args(["scram-credential", "--user", user])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run scram-credential");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{password}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

const AUTHENTICATION: &str = "    authentication:
      sasl: { mechanisms: [SCRAM-SHA-512, SCRAM-SHA-256], credentialsFile: users.scram }
";

#[test]
fn scram_terminated_by_the_proxy_gives_each_user_its_rights() {
    let dir = tempfile::tempdir().unwrap();
    let users = credentials("alice", "alice-pw") + &credentials("bob", "bob-pw");
    std::fs::write(dir.path().join("users.scram"), users).unwrap();
    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    tansu.create_topic("audit", 1);
    let relay = CountingRelay::start(&tansu.addr);
    let base = ports(2);
    let config = pinned(
        "terminated",
        base,
        &relay.addr,
        "",
        &(AUTHENTICATION.to_owned() + BY_PRINCIPAL),
    );
    let mut proxy = Proxy::start_in(dir, &config);
    proxy.allow("not authenticated");
    let bootstrap = format!("127.0.0.1:{base}");
    let client = |mechanism: &str, user: &str, password: &str, library: &str| {
        python::sasl_client(&bootstrap, [mechanism, user, password], library)
    };

    for library in ["librdkafka", "kafka-python"] {
        let alice = client("SCRAM-SHA-512", "alice", "alice-pw", library);
        let bob = client("SCRAM-SHA-256", "bob", "bob-pw", library);
        assert_rights_by_principal(&alice, &bob, library);

        // A wrong password and an unknown user: the same answer, and no
        // connection to the broker for either.
        let before = relay.accepted();
        let wrong = client("SCRAM-SHA-512", "alice", "guess", library);
        let unknown = client("SCRAM-SHA-512", "mallory", "guess", library);
        for (who, seen) in [("wrong password", &wrong), ("unknown user", &unknown)] {
            assert_eq!(seen["ok"], false, "{who}, {library}: {seen}");
            let error = seen["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("invalid credentials"),
                "{who}, {library}: {seen}"
            );
        }
        // The same words (around them, librdkafka says how long it waited:
        // failures from one address are answered ever more slowly;
        // kafka-python names the connection).
        let words = |seen: &serde_json::Value| {
            let error = seen["error"].as_str().unwrap_or_default();
            let from = error.find("Authentication failed").unwrap_or(0);
            let words = error[from..].split(" (after").next().unwrap_or_default();
            words.trim_end_matches(')').to_owned()
        };
        assert_eq!(words(&wrong), words(&unknown), "{library}");
        assert_eq!(
            relay.accepted(),
            before,
            "{library}: an unauthenticated client reached the broker"
        );
    }
    let closed = proxy.metric(
        "sluice_connections_closed_on_error_total{cluster=\"terminated\",reason=\"authentication\"}",
    );
    assert!(closed >= 4.0, "{closed}");
    // Audited with the user each claimed.
    let audit = audit_lines(&proxy);
    for claimed in ["alice", "mallory"] {
        assert!(
            audit.iter().any(|l| l["event"] == "authentication"
                && l["principal"] == claimed
                && l["operation"] == "SCRAM-SHA-512"
                && l["outcome"] == "failed"),
            "{claimed}: {audit:?}"
        );
    }
    proxy.assert_clean_logs();
}

/// Revocation in place: bob is taken out of the credentials file by a
/// reload; his producer's and consumer's connections close at their next
/// request, and alice's producer and consumer see nothing: no error, no
/// reconnect, nothing lost.
#[test]
fn a_user_removed_from_the_credentials_file_loses_its_connections_and_no_one_else_does() {
    let dir = tempfile::tempdir().unwrap();
    let alice = credentials("alice", "alice-pw");
    let both = alice.clone() + &credentials("bob", "bob-pw");
    std::fs::write(dir.path().join("users.scram"), &both).unwrap();
    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    tansu.create_topic("audit", 1);
    let base = ports(2);
    let sasl = "    authentication:
      sasl: { mechanisms: [SCRAM-SHA-512], credentialsFile: users.scram }
";
    let config = pinned("terminated", base, &tansu.addr, "", sasl);
    let mut proxy = Proxy::start_in(dir, &config);
    proxy.allow("not authenticated");
    let bootstrap = format!("127.0.0.1:{base}");
    let a = Steady::start_sasl(
        &bootstrap,
        "orders",
        "a",
        ["SCRAM-SHA-512", "alice", "alice-pw"],
    );
    let b = Steady::start_sasl(&bootstrap, "audit", "b", ["SCRAM-SHA-512", "bob", "bob-pw"]);
    let revoked = "sluice_connections_closed_on_error_total{cluster=\"terminated\",reason=\"authentication\"}";
    assert_eq!(proxy.metric(revoked), 0.0);

    let generation = proxy.clusters().clusters[0].generation;
    std::fs::write(proxy.dir().join("users.scram"), &alice).unwrap();
    let r = proxy.reload(&config);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        proxy.clusters().clusters[0].generation,
        generation,
        "in place"
    );
    proxy.wait_for_metric(revoked, 1.0, Duration::from_secs(30));
    proxy.wait_for_log("its principal was revoked", Duration::from_secs(5));
    drop(b);

    let report = a.finish();
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["disconnects"], 0, "{report}");
    assert_eq!(report["lost"], 0, "{report}");
    proxy.assert_clean_logs();
}

/// A hostile client of a terminating proxy, with raw frames: anything but
/// the SASL exchange first, an oversized frame, SaslHandshake v0 each close
/// the connection, and none opens one to the broker; a mechanism not offered
/// and a malformed token get Kafka's errors. A reload with a credentials file
/// that does not parse is refused, and the users in force go on.
#[test]
fn raw_frames_get_nothing_past_a_terminating_proxy() {
    use kafka_protocol::messages::{
        ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, SaslAuthenticateRequest,
        SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
    };
    use kafka_protocol::protocol::StrBytes;
    use sluice_tests::kafka::Conn;

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("users.scram"),
        credentials("alice", "alice-pw"),
    )
    .unwrap();
    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    let relay = CountingRelay::start(&tansu.addr);
    let base = ports(2);
    let config = pinned("terminated", base, &relay.addr, "", AUTHENTICATION);
    let mut proxy = Proxy::start_in(dir, &config);
    proxy.allow("not authenticated");
    proxy.allow("over the limit");
    proxy.allow("reload rejected");
    let bootstrap = format!("127.0.0.1:{base}");
    let second = Duration::from_secs(5);

    // The exchange's own errors (the proxy's ApiVersions asks the broker's
    // versions once, on a connection of its own).
    let mut conn = Conn::connect(&bootstrap);
    let versions: ApiVersionsResponse =
        conn.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    let handshake = versions.api_keys.iter().find(|k| k.api_key == 17).unwrap();
    assert_eq!(handshake.min_version, 1, "v0 (unframed tokens) not offered");
    let mut request = SaslHandshakeRequest::default();
    request.mechanism = StrBytes::from_static_str("GSSAPI");
    let refused: SaslHandshakeResponse = conn.call(ApiKey::SaslHandshake, 1, &request);
    assert_eq!(refused.error_code, 33, "UNSUPPORTED_SASL_MECHANISM");
    let offered: Vec<&str> = refused.mechanisms.iter().map(|m| m.as_str()).collect();
    assert_eq!(offered, ["SCRAM-SHA-512", "SCRAM-SHA-256"]);
    request.mechanism = StrBytes::from_static_str("SCRAM-SHA-512");
    let chosen: SaslHandshakeResponse = conn.call(ApiKey::SaslHandshake, 1, &request);
    assert_eq!(chosen.error_code, 0);
    let mut token = SaslAuthenticateRequest::default();
    token.auth_bytes = bytes::Bytes::from_static(b"\xff not scram");
    let failed: SaslAuthenticateResponse = conn.call(ApiKey::SaslAuthenticate, 2, &token);
    assert_eq!(failed.error_code, 58, "SASL_AUTHENTICATION_FAILED");
    let words = failed.error_message.as_deref().unwrap_or_default();
    assert!(words.contains("invalid credentials"), "{words}");
    assert!(conn.closed_within(second));

    let before = relay.accepted();
    let mut early = Conn::connect(&bootstrap);
    early.send(ApiKey::Metadata, 12, &MetadataRequest::default());
    assert!(
        early.closed_within(second),
        "a request before authenticating"
    );
    let mut old = Conn::connect(&bootstrap);
    old.send(ApiKey::SaslHandshake, 0, &request);
    assert!(old.closed_within(second), "SaslHandshake v0");
    let mut huge = Conn::connect(&bootstrap);
    std::io::Write::write_all(&mut huge.stream, &(1_i32 << 20).to_be_bytes()).unwrap();
    assert!(huge.closed_within(second), "a frame over 16 KiB");
    assert_eq!(relay.accepted(), before, "a connection reached the broker");

    // A credentials file that does not parse: the reload is refused, the
    // users in force go on.
    let generation = proxy.clusters().clusters[0].generation;
    std::fs::write(
        proxy.dir().join("users.scram"),
        "alice SCRAM-SHA-512 iterations=1\n",
    )
    .unwrap();
    let r = proxy.reload(&config);
    assert_ne!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("users.scram"), "{}", r.body);
    assert_eq!(proxy.clusters().clusters[0].generation, generation);
    let args = [
        &bootstrap[..],
        "SCRAM-SHA-512",
        "alice",
        "alice-pw",
        "orders",
    ];
    let alice = python::run_json("sasl_client.py", &args, Duration::from_secs(60));
    assert_eq!(alice["delivered"]["orders"]["ok"], true, "{alice}");
    proxy.assert_clean_logs();
}

/// SASL over the gateway's TLS, with a principal required: the TLS
/// handshake carries no identity (no client certificate), the SASL login
/// does; with librdkafka and kafka-python, each user gets its rights.
#[test]
fn scram_over_tls_with_a_principal_required_serves_each_user() {
    use sluice_testkit::certs::Ca;

    let dir = tempfile::tempdir().unwrap();
    let users = credentials("alice", "alice-pw") + &credentials("bob", "bob-pw");
    std::fs::write(dir.path().join("users.scram"), users).unwrap();
    let ca = Ca::new("sluice SASL over TLS CA");
    let ca_file = ca.write(dir.path(), "ca.pem");
    ca.server("proxy", 1)
        .write(dir.path(), "server.crt", "server.key");
    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    tansu.create_topic("audit", 1);
    let base = ports(2);
    let tls = "      tls: { certFile: server.crt, keyFile: server.key }\n";
    let sasl = "    authentication:
      sasl: { mechanisms: [SCRAM-SHA-512], credentialsFile: users.scram }
      required: true
";
    let rest = sasl.to_owned() + BY_PRINCIPAL;
    let mut proxy = Proxy::start_in(dir, &pinned("secure", base, &tansu.addr, tls, &rest));
    proxy.allow("not authenticated");
    let bootstrap = format!("127.0.0.1:{base}");
    let ca = ca_file.display().to_string();
    let client = |user: &str, library: &str| {
        let password = format!("{user}-pw");
        let args = [
            &bootstrap[..],
            "SCRAM-SHA-512",
            user,
            &password,
            "orders",
            "audit",
            "--library",
            library,
            "--ca",
            &ca,
        ];
        python::run_json("sasl_client.py", &args, Duration::from_secs(90))
    };
    for library in ["librdkafka", "kafka-python"] {
        let (alice, bob) = (client("alice", library), client("bob", library));
        assert_rights_by_principal(&alice, &bob, library);
    }
    proxy.assert_clean_logs();
}
