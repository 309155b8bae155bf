//! Issue 46, item 6: `default: deny` covers the cluster. Under a policy
//! that allows topics only, a client's IncrementalAlterConfigs on the
//! BROKER resource (every topic's retention), DescribeConfigs of the
//! broker and DeleteGroups are refused by the proxy with the protocol's
//! own errors, each in its place, and never reach tansu; a TOPIC resource
//! beside the broker's in the same request goes on. A rule naming the
//! cluster operations lets them through.

use kafka_protocol::messages::{
    ApiKey, DeleteGroupsRequest, DeleteGroupsResponse, DescribeConfigsRequest,
    DescribeConfigsResponse, GroupId, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, MetadataRequest, MetadataResponse, describe_configs_request,
    incremental_alter_configs_request,
};
use kafka_protocol::protocol::StrBytes;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::kafka::Conn;
use sluice_tests::peers::{TANSU_NODE_ID, Tansu};

/// Topics only: nothing names a cluster operation.
const TOPICS_ONLY: &str = "
          default: deny
          rules:
            - allow: [all]
              topics: [\"open.*\"]
            - allow: [consume, describe]
              topics: [\"ro.*\"]
";

/// The same, and a rule naming the cluster operations.
const CLUSTER_TOO: &str = "
          default: deny
          rules:
            - allow: [all]
              topics: [\"open.*\"]
            - allow: [alter-cluster, describe-cluster, delete-groups]
";

const BROKER: i8 = 4;
const TOPIC: i8 = 2;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;

/// tansu with `open.a`, and the proxy in front with `policy`: the
/// bootstrap address.
fn policed(policy: &str) -> (Tansu, Proxy, String) {
    let tansu = Tansu::start();
    tansu.create_topic("open.a", 1);
    let base = ports(2);
    let config = format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: edge\n    upstream: {{ bootstrapServers: [\"{}\"] }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: 127.0.0.1\n      bootstrapPort: {base}\n      brokerPorts: {{ start: {}, count: 1, firstNodeId: {TANSU_NODE_ID} }}\n    filters:\n      - type: topic-policy\n        config:{policy}",
        tansu.addr,
        base + 1
    );
    let proxy = Proxy::start(&config);
    (tansu, proxy, format!("127.0.0.1:{base}"))
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// Sets `log.retention.ms` on the broker, and `retention.ms` on `topic`
/// when given.
fn alter_retention(topic: Option<&str>) -> IncrementalAlterConfigsRequest {
    let resource = |kind: i8, name: &str, key: &str| {
        let mut config = incremental_alter_configs_request::AlterableConfig::default();
        config.name = text(key);
        config.config_operation = 0;
        config.value = Some(text("1000"));
        let mut r = incremental_alter_configs_request::AlterConfigsResource::default();
        r.resource_type = kind;
        r.resource_name = text(name);
        r.configs = vec![config];
        r
    };
    let mut request = IncrementalAlterConfigsRequest::default();
    request.resources = vec![resource(
        BROKER,
        &TANSU_NODE_ID.to_string(),
        "log.retention.ms",
    )];
    if let Some(topic) = topic {
        request
            .resources
            .push(resource(TOPIC, topic, "retention.ms"));
    }
    request
}

fn describe_broker() -> DescribeConfigsRequest {
    let mut resource = describe_configs_request::DescribeConfigsResource::default();
    resource.resource_type = BROKER;
    resource.resource_name = text(&TANSU_NODE_ID.to_string());
    let mut request = DescribeConfigsRequest::default();
    request.resources = vec![resource];
    request
}

fn delete_group(name: &str) -> DeleteGroupsRequest {
    let mut request = DeleteGroupsRequest::default();
    request.groups_names = vec![GroupId(text(name))];
    request
}

/// `(resource type, name, error code)` of each resource, sorted.
fn altered(response: &IncrementalAlterConfigsResponse) -> Vec<(i8, String, i16)> {
    let mut out: Vec<_> = response
        .responses
        .iter()
        .map(|r| (r.resource_type, r.resource_name.to_string(), r.error_code))
        .collect();
    out.sort();
    out
}

#[test]
fn default_deny_refuses_the_cluster_and_keeps_the_connection() {
    let (tansu, proxy, bootstrap) = policed(TOPICS_ONLY);
    let mut conn = Conn::connect(&bootstrap);
    let broker = TANSU_NODE_ID.to_string();
    let before: DescribeConfigsResponse =
        Conn::connect(&tansu.addr).call(ApiKey::DescribeConfigs, 4, &describe_broker());

    let alone: IncrementalAlterConfigsResponse =
        conn.call(ApiKey::IncrementalAlterConfigs, 1, &alter_retention(None));
    assert_eq!(
        altered(&alone),
        [(BROKER, broker.clone(), CLUSTER_AUTHORIZATION_FAILED)],
        "{alone:?}"
    );
    assert!(
        alone.responses[0]
            .error_message
            .as_ref()
            .is_some_and(|m| m.contains("topic-policy")),
        "answered by the proxy, never sent to tansu: {alone:?}"
    );

    // Beside an allowed topic, per resource: the topic goes on to tansu.
    let mixed: IncrementalAlterConfigsResponse = conn.call(
        ApiKey::IncrementalAlterConfigs,
        1,
        &alter_retention(Some("open.a")),
    );
    let codes = altered(&mixed);
    assert_eq!(codes.len(), 2, "{mixed:?}");
    assert_eq!(codes[0], (TOPIC, "open.a".to_owned(), 0), "{mixed:?}");
    assert_eq!(
        codes[1],
        (BROKER, broker.clone(), CLUSTER_AUTHORIZATION_FAILED),
        "{mixed:?}"
    );

    let described: DescribeConfigsResponse =
        conn.call(ApiKey::DescribeConfigs, 4, &describe_broker());
    assert_eq!(described.results.len(), 1, "{described:?}");
    assert_eq!(
        described.results[0].error_code, CLUSTER_AUTHORIZATION_FAILED,
        "{described:?}"
    );

    let deleted: DeleteGroupsResponse =
        conn.call(ApiKey::DeleteGroups, 2, &delete_group("ro.readers"));
    assert_eq!(deleted.results.len(), 1, "{deleted:?}");
    assert_eq!(deleted.results[0].group_id.to_string(), "ro.readers");
    assert_eq!(
        deleted.results[0].error_code, GROUP_AUTHORIZATION_FAILED,
        "{deleted:?}"
    );

    let after: DescribeConfigsResponse =
        Conn::connect(&tansu.addr).call(ApiKey::DescribeConfigs, 4, &describe_broker());
    assert_eq!(before, after, "the broker's configs are as they were");

    // The connection stays open: the next request is answered.
    let metadata: MetadataResponse = conn.call(ApiKey::Metadata, 12, &MetadataRequest::default());
    assert_eq!(metadata.brokers.len(), 1, "{metadata:?}");

    for (operation, count) in [
        ("alter-cluster", 2.0),
        ("describe-cluster", 1.0),
        ("delete-groups", 1.0),
    ] {
        let series = format!(
            "sluice_policy_denied_total{{cluster=\"edge\",operation=\"{operation}\",rule=\"default\",principal=\"\"}}"
        );
        assert_eq!(proxy.metric(&series), count, "{series}");
    }
    proxy.assert_clean_logs();
}

#[test]
fn a_rule_naming_the_cluster_operations_lets_them_through() {
    let (tansu, proxy, bootstrap) = policed(CLUSTER_TOO);
    let mut conn = Conn::connect(&bootstrap);

    let altered_: IncrementalAlterConfigsResponse =
        conn.call(ApiKey::IncrementalAlterConfigs, 1, &alter_retention(None));
    assert_eq!(altered_.responses.len(), 1, "{altered_:?}");
    assert_ne!(
        altered_.responses[0].error_code, CLUSTER_AUTHORIZATION_FAILED,
        "{altered_:?}"
    );

    let through: DescribeConfigsResponse =
        conn.call(ApiKey::DescribeConfigs, 4, &describe_broker());
    let direct: DescribeConfigsResponse =
        Conn::connect(&tansu.addr).call(ApiKey::DescribeConfigs, 4, &describe_broker());
    assert_eq!(through, direct, "tansu's own answer, through the proxy");

    let deleted: DeleteGroupsResponse =
        conn.call(ApiKey::DeleteGroups, 2, &delete_group("ro.readers"));
    assert_eq!(deleted.results.len(), 1, "{deleted:?}");
    assert_ne!(
        deleted.results[0].error_code, GROUP_AUTHORIZATION_FAILED,
        "tansu's answer: {deleted:?}"
    );
    for operation in ["alter-cluster", "describe-cluster", "delete-groups"] {
        let series = format!(
            "sluice_policy_denied_total{{cluster=\"edge\",operation=\"{operation}\",rule=\"default\",principal=\"\"}}"
        );
        assert_eq!(proxy.metric(&series), 0.0, "{series}");
    }
    proxy.assert_clean_logs();
}
