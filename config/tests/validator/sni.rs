//! SNI routing (`gateway.sni`): the rules with their exact positions, the
//! certificate-coverage warnings (RFC 6125 wildcards: one label), and what
//! `diff` says when a cluster's routing changes.

use sluice_config::{MemoryFiles, ProxyConfig, diff, sni, validate};
use sluice_testkit::certs::Ca;

fn cluster(name: &str, host: &str, port: u16, bootstrap: &str, pattern: &str) -> String {
    format!(
        "  - name: {name}\n    upstream: {{ bootstrapServers: [kafka:9092] }}\n    gateway:\n      listenHost: {host}\n      sni:\n        port: {port}\n        bootstrapHost: {bootstrap}\n        brokerHostPattern: \"{pattern}\"\n      tls: {{ certFile: /tls/{name}.crt, keyFile: /tls/{name}.key }}\n"
    )
}

fn doc(clusters: &[String]) -> String {
    format!("virtualClusters:\n{}", clusters.concat())
}

/// Every cluster's certificate, covering `names`.
fn files(names: &[(&str, &[&str])]) -> MemoryFiles {
    let ca = Ca::new("sni validator");
    names
        .iter()
        .fold(MemoryFiles::default(), |files, (name, sans)| {
            let leaf = ca.sign(sans, name, None);
            files
                .with(format!("/tls/{name}.crt"), leaf.cert)
                .with(format!("/tls/{name}.key"), leaf.key)
        })
}

fn errors(text: &str, files: &MemoryFiles) -> Vec<String> {
    match validate(text.as_bytes(), files) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

fn valid(text: &str, files: &MemoryFiles) -> ProxyConfig {
    let valid = validate(text.as_bytes(), files).unwrap_or_else(|e| panic!("{e:?}"));
    (*valid.config).clone()
}

const ORDERS: (&str, &str) = (
    "bootstrap.orders.example.com",
    "broker-$(nodeId).orders.example.com",
);
const PAYMENTS: (&str, &str) = (
    "bootstrap.payments.example.com",
    "broker-$(nodeId).payments.example.com",
);

#[test]
fn clusters_share_a_port_when_every_name_leads_to_one_of_them() {
    let files = files(&[
        ("orders", &["*.orders.example.com"]),
        ("payments", &["*.payments.example.com"]),
    ]);
    let text = doc(&[
        cluster("orders", "0.0.0.0", 9092, ORDERS.0, ORDERS.1),
        cluster("payments", "0.0.0.0", 9092, PAYMENTS.0, PAYMENTS.1),
    ]);
    let config = valid(&text, &files);
    let s = config.virtual_clusters[1].gateway.sni().expect("sni");
    assert_eq!(s.port.get(), 9092);
    assert_eq!(s.bootstrap_host.as_str(), PAYMENTS.0);
    assert_eq!(
        s.broker_host_pattern.host_for(7).as_deref(),
        Some("broker-7.payments.example.com")
    );
    assert_eq!(sni::warnings(&config), Vec::<String>::new());
}

#[test]
fn a_name_on_the_port_twice_is_an_error_at_the_later_one() {
    let files = files(&[("orders", &["*.orders.example.com"]), ("copy", &["x"])]);
    let text = doc(&[
        cluster("orders", "0.0.0.0", 9092, ORDERS.0, ORDERS.1),
        cluster(
            "copy",
            "0.0.0.0",
            9092,
            ORDERS.0,
            "b-$(nodeId).copy.example.com",
        ),
    ]);
    assert_eq!(
        errors(&text, &files),
        [
            "17:24: virtualClusters[1].gateway.sni.bootstrapHost: name \"bootstrap.orders.example.com\" is already used by virtual cluster \"orders\" on port 9092"
        ]
    );
    // On another port the same names are fine.
    let elsewhere = text.replacen("port: 9092", "port: 9093", 1);
    assert_eq!(errors(&elsewhere, &files), Vec::<String>::new());
}

#[test]
fn sni_and_port_per_broker_are_one_or_the_other() {
    let files = files(&[("orders", &["*.orders.example.com"])]);
    let text = doc(&[cluster("orders", "0.0.0.0", 9092, ORDERS.0, ORDERS.1)])
        .replace(
            "      sni:\n",
            "      brokerPorts: { start: 1, count: 1 }\n      sni:\n",
        )
        .replace("      tls: {", "      tlz: {");
    assert_eq!(
        errors(&text, &files),
        [
            "5:7: virtualClusters[0].gateway.tls: required with gateway.sni: the shared port routes by the TLS server name",
            "6:7: virtualClusters[0].gateway.brokerPorts: not allowed with gateway.sni: the server names in sni name the bootstrap and every broker",
            "11:7: virtualClusters[0].gateway.tlz: unknown field \"tlz\", did you mean \"tls\"?",
        ]
    );
}

#[test]
fn uncovered_names_are_warnings_with_wildcards_covering_one_label() {
    let files = files(&[
        // A wildcard one level too high: covers neither name.
        ("orders", &["*.example.com"]),
        // The bootstrap and brokers 0-2 listed one by one: covered.
        (
            "payments",
            &[
                "bootstrap.payments.example.com",
                "broker-0.payments.example.com",
                "broker-1.payments.example.com",
                "broker-2.payments.example.com",
            ],
        ),
    ]);
    let text = doc(&[
        cluster("orders", "0.0.0.0", 9092, ORDERS.0, ORDERS.1),
        cluster("payments", "0.0.0.0", 9092, PAYMENTS.0, PAYMENTS.1),
    ]);
    let config = valid(&text, &files);
    assert_eq!(
        sni::warnings(&config),
        [
            "virtual cluster orders: the gateway certificate does not cover the bootstrap name bootstrap.orders.example.com; clients that verify it will refuse to connect",
            "virtual cluster orders: the gateway certificate does not cover the broker names of broker-$(nodeId).orders.example.com (such as broker-0.orders.example.com); clients that verify it will refuse the brokers",
        ]
    );
}

#[test]
fn diff_names_routing_changes() {
    let files = files(&[
        ("orders", &["*.orders.example.com"]),
        ("payments", &["*.payments.example.com"]),
    ]);
    let old = valid(
        &doc(&[cluster("orders", "0.0.0.0", 9092, ORDERS.0, ORDERS.1)]),
        &files,
    );
    let new = valid(
        &doc(&[cluster(
            "orders",
            "0.0.0.0",
            9093,
            "boot.orders.example.com",
            ORDERS.1,
        )]),
        &files,
    );
    let d = diff(&old, &new);
    assert_eq!(d.modified.len(), 1);
    assert_eq!(
        d.modified[0].reasons,
        [
            "gateway.sni.port changed from 9092 to 9093",
            "gateway.sni.bootstrapHost changed from bootstrap.orders.example.com to boot.orders.example.com",
        ]
    );
    let ports = valid(
        "virtualClusters:\n  - name: orders\n    upstream: { bootstrapServers: [kafka:9092] }\n    gateway: { advertisedHost: p, bootstrapPort: 19092, brokerPorts: { start: 19093, count: 1 } }\n",
        &files,
    );
    assert_eq!(
        diff(&ports, &old).modified[0].reasons,
        [
            "gateway.sni added (port per broker removed)",
            "gateway.tls added"
        ]
    );
}
