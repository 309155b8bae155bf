//! SASL upstreams, against a broker that really requires SCRAM-SHA-512
//! (tansu with SQLite storage and `--authentication`, see
//! `sluice_tests::sasl`), with real librdkafka clients.
//!
//! - `passthrough`: clients' own SCRAM through the proxy, plaintext and
//!   TLS both ways (SASL_SSL), with a consumer group
//! - `own`: a fresh proxy and a client whose first connection is to a
//!   broker port: `upstream.sasl`, `upstream.nodes`, neither, and wrong
//!   credentials (named, never shown, rotated by a reload)
//! - `rotation`: a new password in a Secret-style volume, applied by the
//!   watcher without a new generation
//! - `reauth`: a second authentication on a live connection (KIP-368)
//!   passes through
//! - `inspection`: the user the broker authenticated as the principal

use std::time::Duration;

use kafka_protocol::messages::{ApiKey, ApiVersionsRequest};

use sluice_tests::kafka::Conn;
use sluice_tests::peers::TANSU_NODE_ID;
use sluice_tests::python;
use sluice_tests::sasl::{MECHANISM, PASSWORD, USER};

mod inspection;
mod own;
mod passthrough;
mod reauth;
mod rotation;

/// The proxy's own SCRAM user, created on every broker of these tests.
const PROXY_USER: &str = "sluice-proxy";
/// Its password.
const PROXY_PASSWORD: &str = "proxy-secret-93be71";

/// Connections of cluster `orders` closed because the upstream refused the
/// proxy's own lookup.
const AUTH_CLOSED: &str =
    "sluice_connections_closed_on_error_total{cluster=\"orders\",reason=\"upstream_auth\"}";

/// A raw client on the broker port: the proxy closes it once its lookup fails.
fn refused_on_broker_port(base: u16) {
    let mut conn = Conn::connect(&format!("127.0.0.1:{}", base + 1));
    conn.send(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert!(
        conn.closed_within(Duration::from_secs(20)),
        "the proxy kept a broker-port connection it could not route"
    );
}

/// A configuration with one cluster `name` in front of `upstream`:
/// bootstrap on `base`, tansu's one broker on `base + 1`; `upstream_extra`
/// (indented YAML under `upstream`) and `gateway_extra` (under `gateway`)
/// appended.
fn config(
    name: &str,
    upstream: &str,
    base: u16,
    upstream_extra: &str,
    gateway_extra: &str,
) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: {name}\n    upstream:\n      bootstrapServers: [\"{upstream}\"]\n{upstream_extra}    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }}\n{gateway_extra}",
        base + 1
    )
}

/// Runs `roundtrip.py` with the client's SCRAM credentials (and `extra`
/// arguments): `count` messages produced and consumed with a group.
fn round_trip(bootstrap: &str, topic: &str, count: u32, extra: &[&str]) -> serde_json::Value {
    let count = count.to_string();
    let mut args = vec![bootstrap, topic, &count, "sasl-group"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--sasl", MECHANISM, USER, PASSWORD]);
    python::run_json("roundtrip.py", &args, Duration::from_secs(120))
}

/// Every message made the round trip, and only the proxy's broker port is
/// in the metadata the client saw.
fn assert_round_trip(report: &serde_json::Value, count: u32, broker_port: u16) {
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    assert_eq!(report["acked"], count, "{report}");
    assert_eq!(report["unique"], count, "{report}");
    assert_eq!(
        report["brokers"],
        serde_json::json!([[TANSU_NODE_ID, "127.0.0.1", broker_port]]),
        "{report}"
    );
}

/// The broker answers ApiVersions but hangs up on Metadata before
/// authentication: it really requires SASL.
fn assert_requires_sasl(addr: &str) {
    use kafka_protocol::messages::{ApiVersionsResponse, MetadataRequest};
    let mut conn = Conn::connect(addr);
    let versions: ApiVersionsResponse =
        conn.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(versions.error_code, 0);
    conn.send(ApiKey::Metadata, 9, &MetadataRequest::default());
    assert!(
        conn.closed_within(Duration::from_secs(10)),
        "the broker answered Metadata without authentication"
    );
}
