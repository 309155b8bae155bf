//! Revocation of certificate principals, in place: alice's and carol's
//! certificates come from one CA, bob's from another, and the cluster's
//! `clientCaFile` trusts both. Each runs a TLS producer and consumer group
//! under its principal. A reload that stops trusting bob's CA ends bob's
//! connections at their next request; one whose rules no longer map carol
//! ends hers; alice's clients see nothing: no error, no reconnect.

use std::time::Duration;

use sluice_testkit::certs::Ca;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::pinned;
use sluice_tests::peers::Tansu;
use sluice_tests::python::Steady;

fn config(base: u16, upstream: &str, who: &str) -> String {
    let tls =
        "      tls: { certFile: server.crt, keyFile: server.key, clientCaFile: clients.pem }\n";
    let rules = format!(
        "    authentication:
      mtls:
        principals:
          - {{ from: subject, match: \"CN=({who}),.*\", principal: \"$1\" }}
      required: true
"
    );
    pinned("revoking", base, upstream, tls, &rules)
}

#[test]
fn a_certificate_no_longer_trusted_or_mapped_loses_its_connections_and_no_one_else_does() {
    let dir = tempfile::tempdir().unwrap();
    let (ours, theirs) = (Ca::new("sluice CA one"), Ca::new("sluice CA two"));
    let one = ours.write(dir.path(), "one.pem");
    let two = theirs.write(dir.path(), "two.pem");
    let both = [one.as_path(), two.as_path()].map(|p| std::fs::read_to_string(p).unwrap());
    std::fs::write(dir.path().join("clients.pem"), both.concat()).unwrap();
    ours.server("proxy", 1)
        .write(dir.path(), "server.crt", "server.key");
    for (ca, name) in [(&ours, "alice"), (&theirs, "bob"), (&ours, "carol")] {
        ca.client(name, "staff", &[]).write(
            dir.path(),
            &format!("{name}.crt"),
            &format!("{name}.key"),
        );
    }
    let tansu = Tansu::start();
    for topic in ["a", "b", "c"] {
        tansu.create_topic(topic, 1);
    }
    let base = ports(2);
    let everyone = config(base, &tansu.addr, "alice|bob|carol");
    let mut proxy = Proxy::start_in(dir, &everyone);
    // A revoked client reconnects before the test stops it: refused then.
    proxy.allow("no principal");
    let bootstrap = format!("127.0.0.1:{base}");
    let path = |name: &str| proxy.dir().join(name);
    let steady = |name: &str, topic: &str| {
        let (crt, key) = (path(&format!("{name}.crt")), path(&format!("{name}.key")));
        Steady::start_mtls(&bootstrap, topic, name, &path("one.pem"), [&crt, &key])
    };
    let (alice, bob, carol) = (
        steady("alice", "a"),
        steady("bob", "b"),
        steady("carol", "c"),
    );
    let revoked =
        "sluice_connections_closed_on_error_total{cluster=\"revoking\",reason=\"authentication\"}";
    assert_eq!(proxy.metric(revoked), 0.0);

    // bob's CA is no longer trusted.
    std::fs::copy(path("one.pem"), path("clients.pem")).unwrap();
    let generation = proxy.clusters().clusters[0].generation;
    let r = proxy.reload(&everyone);
    assert_eq!(r.status, 200, "{}", r.body);
    proxy.wait_for_metric(revoked, 1.0, Duration::from_secs(30));
    let line = proxy.wait_for_log("its principal was revoked", Duration::from_secs(5));
    assert!(line.contains("bob"), "{line}");
    drop(bob);

    // carol's certificate is still trusted, but no rule maps it now.
    let after_bob = proxy.metric(revoked);
    let r = proxy.reload(&config(base, &tansu.addr, "alice"));
    assert_eq!(r.status, 200, "{}", r.body);
    proxy.wait_for_metric(revoked, after_bob + 1.0, Duration::from_secs(30));
    drop(carol);
    assert_eq!(
        proxy.clusters().clusters[0].generation,
        generation,
        "in place"
    );

    let report = alice.finish();
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["disconnects"], 0, "{report}");
    assert_eq!(report["lost"], 0, "{report}");
    let logs = proxy.logs();
    let alice_revoked = logs
        .iter()
        .any(|l| l.contains("its principal was revoked") && l.contains("alice"));
    assert!(!alice_revoked, "alice was never revoked");
    proxy.assert_clean_logs();
}
