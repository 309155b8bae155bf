//! The proxy's own Kafka client (its broker lookup for a broker port used
//! before any bootstrap, a reload's upstream check) against each broker
//! implementation the tests have: tansu and librdkafka's three-broker mock
//! cluster. The mock writes a byte after every flexible Metadata response
//! that the schema does not have; the data plane always tolerated it, and
//! the own client, decoding with the same function, does too.

use std::time::Duration;

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
};
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::kafka::Conn;
use sluice_tests::peers::{MockCluster, TANSU_NODE_ID, Tansu};
use sluice_tests::python;

/// A cluster `name` in front of `upstream`, its bootstrap on `base` and
/// ports for nodes `first..first + count` after it.
pub(crate) fn cluster(name: &str, upstream: &str, base: u16, first: i32, count: u16) -> String {
    format!(
        "  - name: {name}\n    upstream: {{ bootstrapServers: [\"{upstream}\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: {count}, firstNodeId: {first} }}\n",
        base + 1
    )
}

pub(crate) fn config(clusters: &[String]) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n{}",
        clusters.concat()
    )
}

/// The brokers of each implementation: the first one's address, its node
/// ids, and what keeps it running.
enum Broker {
    Tansu(Tansu),
    Mock(MockCluster),
}

impl Broker {
    fn all() -> Vec<Broker> {
        let tansu = Tansu::start();
        tansu.create_topic("own", 1);
        vec![
            Broker::Tansu(tansu),
            Broker::Mock(MockCluster::start(3, &["own:3"])),
        ]
    }

    fn name(&self) -> &'static str {
        match self {
            Broker::Tansu(_) => "tansu",
            Broker::Mock(_) => "mock",
        }
    }

    fn addr(&self) -> &str {
        match self {
            Broker::Tansu(t) => &t.addr,
            Broker::Mock(m) => &m.brokers[0],
        }
    }

    /// (first node id, how many).
    fn nodes(&self) -> (i32, u16) {
        match self {
            Broker::Tansu(_) => (TANSU_NODE_ID, 1),
            Broker::Mock(m) => (1, u16::try_from(m.brokers.len()).unwrap()),
        }
    }
}

#[test]
fn a_reload_adding_a_cluster_passes_its_upstream_check_on_every_broker() {
    for broker in Broker::all() {
        let (first, count) = broker.nodes();
        let (a, b) = (ports(count + 1), ports(count + 1));
        let proxy = Proxy::start(&config(&[cluster("a", broker.addr(), a, first, count)]));
        let added = config(&[
            cluster("a", broker.addr(), a, first, count),
            cluster("b", broker.addr(), b, first, count),
        ]);
        let answer = proxy.reload(&added);
        assert_eq!(answer.status, 200, "{}: {}", broker.name(), answer.body);
        proxy.assert_clean_logs();
    }
}

#[test]
fn a_client_may_start_on_a_broker_port_of_every_broker() {
    for broker in Broker::all() {
        let (first, count) = broker.nodes();
        let base = ports(count + 1);
        let proxy = Proxy::start(&config(&[cluster(
            "cold",
            broker.addr(),
            base,
            first,
            count,
        )]));
        // The proxy has learned nothing yet: it asks the upstream itself.
        let broker_port = format!("127.0.0.1:{}", base + 1);
        let mut conn = Conn::connect(&broker_port);
        // v0: every broker has it (the mock answers v3 with
        // UNSUPPORTED_VERSION, and a client falls back to v0).
        let versions: ApiVersionsResponse =
            conn.call(ApiKey::ApiVersions, 0, &ApiVersionsRequest::default());
        assert_eq!(versions.error_code, 0, "{}", broker.name());
        let mut req = MetadataRequest::default();
        req.topics = None;
        let md: MetadataResponse = conn.call(ApiKey::Metadata, 9, &req);
        assert_eq!(md.brokers.len(), usize::from(count), "{}", broker.name());
        assert!(
            md.brokers.iter().all(|b| b.host.as_str() == "127.0.0.1"),
            "{}: {md:?}",
            broker.name()
        );
        drop(conn);
        // And a real client (librdkafka) whose only address is that port.
        let report = python::run_json(
            "roundtrip.py",
            &[&broker_port, "own", "20", "direct"],
            Duration::from_secs(60),
        );
        assert_eq!(report["unique"], 20, "{}: {report}", broker.name());
        proxy.assert_clean_logs();
    }
}
