//! SASL inspection (`authentication.saslInspection`): tansu, requiring
//! SCRAM-SHA-512, authenticates the clients; the proxy reads the user each
//! authenticated as, once the broker says it succeeded, and a topic policy
//! judges by it. With librdkafka and kafka-python. With `required`, a raw
//! request before any authentication closes the connection, unforwarded.

use std::time::Duration;

use kafka_protocol::messages::{ApiKey, MetadataRequest};
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::audit::audit_lines;
use sluice_tests::config::{BY_PRINCIPAL, assert_rights_by_principal};
use sluice_tests::kafka::Conn;
use sluice_tests::python;
use sluice_tests::sasl::ScramTansu;

use super::config;

const INSPECTED: &str = "    authentication: { saslInspection: {}, required: true }\n";

#[test]
fn the_principal_is_the_user_the_broker_authenticated() {
    let users = [
        ("alice", "alice-pw", "SCRAM-SHA-512"),
        ("bob", "bob-pw", "SCRAM-SHA-512"),
    ];
    let broker = ScramTansu::start(&users, &[("orders", 1), ("audit", 1)], None);
    let base = ports(2);
    let yaml = config("inspected", &broker.addr, base, "", "") + INSPECTED + BY_PRINCIPAL;
    let mut proxy = Proxy::start(&yaml);
    proxy.allow("no principal");
    let bootstrap = format!("127.0.0.1:{base}");
    let client = |user: &str, password: &str, library: &str| {
        python::sasl_client(&bootstrap, ["SCRAM-SHA-512", user, password], library)
    };
    for library in ["librdkafka", "kafka-python"] {
        let alice = client("alice", "alice-pw", library);
        let bob = client("bob", "bob-pw", library);
        assert_rights_by_principal(&alice, &bob, library);
        // The broker refuses a wrong password: no principal, no access.
        let wrong = client("alice", "guess", library);
        assert_eq!(wrong["ok"], false, "{library}: {wrong}");
    }
    let mut early = Conn::connect(&bootstrap);
    early.send(ApiKey::Metadata, 12, &MetadataRequest::default());
    assert!(early.closed_within(Duration::from_secs(5)));
    let refused = "sluice_client_errors_total{cluster=\"inspected\",cause=\"no_principal\"}";
    // Counted as the connection ends, which may be just after the close.
    proxy.wait_for_metric(refused, 1.0, Duration::from_secs(5));
    let audit = audit_lines(&proxy);
    assert!(
        audit.iter().any(|l| l["event"] == "denied"
            && l["principal"] == "bob"
            && l["resources"] == "orders"),
        "{audit:?}"
    );
}
