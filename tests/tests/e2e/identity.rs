//! Principals from verified client certificates (`authentication.mtls`),
//! with librdkafka and kafka-python: two client certificates from one CA,
//! one mapped to a principal by its SPIFFE id, one by its subject, a third
//! mapped by no rule. With `required: true` the third is refused after its
//! handshake, and no connection reaches the broker for it (a relay in front
//! of tansu counts them; the brokers are listed in `upstream.nodes`, so the
//! proxy never connects upstream on its own). Then rights by principal:
//! two certificates of one CA, a topic policy keyed on their principals,
//! and a client that says another's client id keeps its own rights.

mod revocation;

use std::time::Duration;

use sluice_testkit::certs::Ca;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::audit::audit_lines;
use sluice_tests::config::pinned;
use sluice_tests::peers::Tansu;
use sluice_tests::python;
use sluice_tests::relay::CountingRelay;

const RULES: &str = "    authentication:
      mtls:
        principals:
          - from: uri
            match: \"spiffe://sluice.test/ns/([a-z0-9-]+)/sa/([a-z0-9-]+)\"
            principal: \"$1/$2\"
          - from: subject
            match: \"CN=([^,]+),OU=orders,.*\"
            principal: \"$1\"
            case: lower
      required: true
";

/// A proxy configuration of one TLS cluster, `identified`, on ports `base`
/// and `base + 1`, in front of the broker at `upstream`, with `rest` (its
/// `authentication`, its filters).
fn identified(base: u16, upstream: &str, rest: &str) -> String {
    let tls = "      tls: { certFile: server.crt, keyFile: server.key, clientCaFile: ca.pem }\n";
    pinned("identified", base, upstream, tls, rest)
}

#[test]
fn only_clients_whose_certificate_maps_to_a_principal_reach_the_broker() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("sluice identity CA");
    ca.write(dir.path(), "ca.pem");
    ca.server("proxy", 1)
        .write(dir.path(), "server.crt", "server.key");
    let clients = [
        (
            "writer",
            ca.client(
                "w-1",
                "guests",
                &["spiffe://sluice.test/ns/orders/sa/writer"],
            ),
        ),
        ("alice", ca.client("Alice", "orders", &[])),
        ("mallory", ca.client("mallory", "guests", &[])),
    ];
    for (name, leaf) in &clients {
        leaf.write(dir.path(), &format!("{name}.crt"), &format!("{name}.key"));
    }

    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    let relay = CountingRelay::start(&tansu.addr);
    let base = ports(2);
    let config = identified(base, &relay.addr, RULES);
    let mut proxy = Proxy::start_in(dir, &config);
    proxy.allow("client tls handshake");
    proxy.allow("no principal");
    let bootstrap = format!("127.0.0.1:{base}");
    let file = |name: &str| proxy.dir().join(name).display().to_string();
    let probe = |who: &str, library: &str| {
        python::run_json(
            "tls_probe.py",
            &[
                &bootstrap,
                &file("ca.pem"),
                &file(&format!("{who}.crt")),
                &file(&format!("{who}.key")),
                "--library",
                library,
            ],
            Duration::from_secs(60),
        )
    };

    for library in ["librdkafka", "kafka-python"] {
        for who in ["writer", "alice"] {
            let seen = probe(who, library);
            assert_eq!(seen["ok"], true, "{who} through {library}: {seen}");
            assert!(
                seen["topics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t == "orders"),
                "{who} through {library}: {seen}"
            );
        }
        let before = relay.accepted();
        assert!(before > 0, "the mapped clients went through the relay");
        let refused = probe("mallory", library);
        assert_eq!(refused["ok"], false, "mallory through {library}: {refused}");
        assert_eq!(
            relay.accepted(),
            before,
            "a client without a principal opened a connection to the broker ({library})"
        );
    }
    assert!(
        proxy.metric(
            "sluice_connections_closed_on_error_total{cluster=\"identified\",reason=\"tls\"}"
        ) >= 2.0
    );
    let refusals =
        proxy.metric("sluice_client_errors_total{cluster=\"identified\",cause=\"no_principal\"}");
    assert!(refusals >= 2.0, "{refusals}");
    // Warned about once per 10 s, not at every retry of the clients.
    let warned = |l: &&String| l.contains("no principal") && !l.contains("\"data plane\"");
    let lines = proxy.logs().iter().filter(warned).count();
    assert!(
        (lines as f64) < refusals,
        "{lines} lines for {refusals} refusals"
    );
    // Each refusal is audited (bounded per event: a burst, then a rate).
    let audited = audit_lines(&proxy);
    let refused = |l: &&serde_json::Value| {
        l["event"] == "authentication" && l["operation"] == "mtls" && l["outcome"] == "no principal"
    };
    assert!(audited.iter().filter(refused).count() >= 2, "{audited:?}");

    // A rule for the guests, by reload: in place (the same generation, no
    // drain), and mallory's next handshake maps.
    let generation = proxy.clusters().clusters[0].generation;
    let guests = "          - from: subject\n            match: \"CN=([^,]+),OU=guests,.*\"\n            principal: \"guest-$1\"\n";
    let widened = config.replace(
        "      required: true\n",
        &format!("{guests}      required: true\n"),
    );
    assert_ne!(widened, config);
    let r = proxy.reload(&widened);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(proxy.clusters().clusters[0].generation, generation);
    let admitted = probe("mallory", "librdkafka");
    assert_eq!(admitted["ok"], true, "mallory after the reload: {admitted}");
    assert!(
        proxy
            .logs()
            .iter()
            .any(|l| l.contains("CN=mallory,OU=guests,O=Sluice tests")),
        "the refusal names the certificate"
    );
    proxy.assert_clean_logs();
}

/// Rights by principal: alice may write `orders`, bob `audit`; both may
/// describe every topic. Bob's client sets alice's client id. A quota per
/// principal (high: it only counts here).
const BY_PRINCIPAL: &str = "    authentication:
      mtls:
        principals:
          - { from: subject, match: \"CN=([^,]+),OU=staff,.*\", principal: \"$1\" }
    filters:
      - type: topic-policy
        config:
          default: deny
          rules:
            - { allow: [produce], topics: [orders], principals: [alice] }
            - { allow: [produce], topics: [audit], principals: [\"b*\"] }
            - { allow: [describe], topics: [\"*\"] }
            - { allow: [create], topics: [\"scratch-*\"], principals: [alice] }
      - type: quota
        config: { perPrincipal: { produceBytesPerSecond: 104857600 } }
";

#[test]
fn two_certificates_of_one_ca_get_their_own_rights_whatever_client_id_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("sluice identity CA");
    ca.write(dir.path(), "ca.pem");
    ca.server("proxy", 1)
        .write(dir.path(), "server.crt", "server.key");
    for name in ["alice", "bob"] {
        ca.client(name, "staff", &[]).write(
            dir.path(),
            &format!("{name}.crt"),
            &format!("{name}.key"),
        );
    }
    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    tansu.create_topic("audit", 1);
    let base = ports(2);
    let mut proxy = Proxy::start_in(dir, &identified(base, &tansu.addr, BY_PRINCIPAL));
    let bootstrap = format!("127.0.0.1:{base}");
    let file = |name: &str| proxy.dir().join(name).display().to_string();
    let produce = |who: &str, client_id: &str, library: &str| {
        let (crt, key) = (file(&format!("{who}.crt")), file(&format!("{who}.key")));
        let args = [
            &bootstrap[..],
            &file("ca.pem"),
            &crt,
            &key,
            client_id,
            "orders",
            "audit",
            "--library",
            library,
        ];
        python::run_json("tls_produce.py", &args, Duration::from_secs(90))
    };

    for library in ["librdkafka", "kafka-python"] {
        let alice = produce("alice", "alice", library);
        assert_eq!(alice["orders"]["ok"], true, "alice, {library}: {alice}");
        assert_eq!(alice["audit"]["ok"], false, "alice, {library}: {alice}");
        // Bob says he is alice; his certificate says otherwise.
        let bob = produce("bob", "alice", library);
        assert_eq!(bob["audit"]["ok"], true, "bob, {library}: {bob}");
        assert_eq!(bob["orders"]["ok"], false, "bob as alice, {library}: {bob}");
        let error = bob["orders"]["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("TOPIC_AUTHORIZATION_FAILED")
                || error.contains("TopicAuthorizationFailed"),
            "bob, {library}: {bob}"
        );
    }
    // An administrative request that goes through is audited, with whoever
    // sent it; so is every refusal.
    let created = python::run_json(
        "admin.py",
        &[
            &bootstrap[..],
            "create-topic",
            "scratch-1",
            "1",
            "--ssl",
            &file("ca.pem"),
            &file("alice.crt"),
            &file("alice.key"),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(created["scratch-1"]["ok"], true, "{created}");
    proxy.wait_for_log("\"event\":\"admin\"", Duration::from_secs(10));
    let audit = audit_lines(&proxy);
    let admin: Vec<_> = audit.iter().filter(|l| l["event"] == "admin").collect();
    assert_eq!(admin.len(), 1, "{audit:?}");
    let expected = [
        ("principal", "alice"),
        ("operation", "create"),
        ("resources", "scratch-1"),
        ("outcome", "forwarded"),
    ];
    for (field, value) in expected {
        assert_eq!(admin[0][field], value, "{field} in {:?}", admin[0]);
    }
    // Bob, saying he is alice, is refused and audited as bob.
    assert!(
        audit.iter().any(|l| l["event"] == "denied"
            && l["principal"] == "bob"
            && l["client_id"] == "alice"
            && l["resources"] == "orders"),
        "{audit:?}"
    );

    // Counted by principal: bob's refusals as bob, whatever id he said.
    for who in ["alice", "bob"] {
        let denied = proxy.metric(&format!(
            "sluice_policy_denied_total{{cluster=\"identified\",operation=\"produce\",rule=\"default\",principal=\"{who}\"}}"
        ));
        assert!(denied >= 2.0, "{who}: {denied}");
        // Each one's produce bytes count in a bucket of its own.
        let bytes = proxy.metric(&format!(
            "sluice_quota_principal_bytes_total{{cluster=\"identified\",principal=\"{who}\",kind=\"produce\"}}"
        ));
        assert!(bytes > 0.0, "{who}: {bytes}");
    }
    proxy.assert_clean_logs();
}
