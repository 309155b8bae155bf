//! SNI routing (`gateway.sni`): every virtual cluster and every broker
//! behind one TLS port, the cluster and node chosen by the server name.
//! Real librdkafka clients verify the proxy's certificate for the names,
//! which resolve through a hosts file of the test's own (a private mount
//! namespace per client); real tansu brokers behind.
//!
//! - `roundtrip`: two clusters on one port, a consumer group each, only
//!   SNI names and the one port in metadata and in the socket table
//! - `reload`: adding and modifying a cluster on the shared port while
//!   steady clients on the others never notice
//! - `unrouted`: unknown and missing server names and a plaintext client
//!   each close only their own connection, counted

use std::path::Path;

use sluice_testkit::certs::Ca;
use sluice_tests::hosts::Hosts;
use sluice_tests::peers::TANSU_NODE_ID;

mod reload;
mod roundtrip;
mod unrouted;

/// The test domain; nothing outside the tests' hosts files resolves it.
const DOMAIN: &str = "sni.test";

/// A cluster's bootstrap name.
fn bootstrap(cluster: &str) -> String {
    format!("bootstrap.{cluster}.{DOMAIN}")
}

/// The name of tansu's broker in a cluster.
fn broker(cluster: &str) -> String {
    format!("broker-{TANSU_NODE_ID}.{cluster}.{DOMAIN}")
}

/// A hosts file naming the bootstrap and the broker of each cluster.
fn hosts(clusters: &[&str]) -> Hosts {
    let names: Vec<String> = clusters
        .iter()
        .flat_map(|c| [bootstrap(c), broker(c)])
        .collect();
    Hosts::new(&names)
}

/// Writes the CA (`ca.pem`) and, per cluster, a certificate for
/// `*.<cluster>.sni.test` (`<cluster>.crt`, `<cluster>.key`) to `dir`.
fn certificates(dir: &Path, clusters: &[&str]) -> std::path::PathBuf {
    let ca = Ca::new("sluice sni test CA");
    for c in clusters {
        ca.sign(&[&format!("*.{c}.{DOMAIN}")], c, None).write(
            dir,
            &format!("{c}.crt"),
            &format!("{c}.key"),
        );
    }
    ca.write(dir, "ca.pem")
}

/// A virtual cluster on the SNI port `port` of 127.0.0.1, in front of
/// `upstream`; `extra` (indented YAML) is appended.
fn cluster(name: &str, upstream: &str, port: u16, extra: &str) -> String {
    format!(
        "  - name: {name}\n    upstream: {{ bootstrapServers: [\"{upstream}\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      sni:\n        port: {port}\n        bootstrapHost: {}\n        brokerHostPattern: \"broker-$(nodeId).{name}.{DOMAIN}\"\n      tls: {{ certFile: {name}.crt, keyFile: {name}.key }}\n{extra}",
        bootstrap(name)
    )
}
