//! Configurations the watcher tests reload, with `{admin}` left for
//! [`Proxy`](crate::proxy::Proxy) to fill, and the version the proxy reports
//! for a configuration's text.

/// A configuration with one cluster and no broker behind it (reloads need
/// none): bootstrap on `port`, its broker port on `port + 1`; `n` makes each
/// one distinct. With no broker, the client-side analysis' front door could
/// only fail (each try logged as a client's would be): it is off; the
/// signals still judge each reload.
pub fn watched(admin: &str, port: u16, n: u32) -> String {
    format!(
        "admin: {{ listen: \"{admin}\" }}\ndrainTimeout: 1s\nvirtualClusters:\n  - name: watched\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n    limits: {{ maxConnections: {} }}\n    analysis: {{ frontDoor: {{ enabled: false }} }}\n",
        port + 1,
        1000 + n
    )
}

/// The configuration version of some text, as the proxy reports it.
pub fn version(text: &str) -> String {
    sluice_volume::sha256_hex(text.as_bytes())
}
