//! The proxy's refusals of cluster operations, and the configs APIs'
//! non-topic resources judged as the cluster, per resource.

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, StrBytes};
use sluice_config::policy::API_OPERATIONS;

use super::*;
use crate::encode;
use crate::frame::request_header;
use crate::policy::{Policed, TopicIds, police};

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// The body of a response frame (prefix included) as `T`.
fn response<T: Decodable>(frame: &Bytes, api: ApiKey, version: i16) -> T {
    let mut buf = frame.slice(4..);
    let header = ResponseHeader::decode(&mut buf, api.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 7);
    T::decode(&mut buf, version).unwrap()
}

fn refused<Req: kafka_protocol::protocol::Encodable, Resp: Decodable>(
    api: ApiKey,
    version: i16,
    request: &Req,
) -> Resp {
    let frame = encode::request(api, version, 7, "c", request).unwrap();
    let answer = refuse_cluster(&frame, &request_header(&frame).unwrap()).unwrap();
    response(&answer, api, version)
}

#[test]
fn every_cluster_operation_has_a_refusal() {
    for (key, op) in API_OPERATIONS {
        let name = crate::api_name(*key);
        assert_eq!(refuses(*key), op.is_cluster(), "{name} ({op:?})");
    }
    assert!(!refuses(ApiKey::DescribeCluster as i16), "every client's");
    assert!(!refuses(ApiKey::ApiVersions as i16));
}

#[test]
fn delete_groups_gets_group_authorization_failed_per_group() {
    let mut request = DeleteGroupsRequest::default();
    request.groups_names = vec![GroupId(text("a")), GroupId(text("b"))];
    for version in 0..=2 {
        let r: DeleteGroupsResponse = refused(ApiKey::DeleteGroups, version, &request);
        let got: Vec<(String, i16)> = (r.results.iter())
            .map(|g| (g.group_id.to_string(), g.error_code))
            .collect();
        assert_eq!(got, [("a".to_owned(), 30), ("b".to_owned(), 30)]);
    }
}

#[test]
fn answers_carry_the_error_at_the_top_or_on_each_entry() {
    let acls: DescribeAclsResponse =
        refused(ApiKey::DescribeAcls, 3, &DescribeAclsRequest::default());
    assert_eq!(acls.error_code, CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(acls.error_message.as_deref(), Some(MESSAGE));

    let mut create = CreateAclsRequest::default();
    create.creations = vec![Default::default(), Default::default()];
    let created: CreateAclsResponse = refused(ApiKey::CreateAcls, 3, &create);
    assert_eq!(created.results.len(), 2);
    assert!(created.results.iter().all(|r| r.error_code == 31));

    // ElectLeaders v0 has no error at the top: each partition has it.
    let mut elect = ElectLeadersRequest::default();
    let mut topic = elect_leaders_request::TopicPartitions::default();
    topic.topic = TopicName(text("orders"));
    topic.partitions = vec![0, 1];
    elect.topic_partitions = Some(vec![topic]);
    for version in [0, 2] {
        let r: ElectLeadersResponse = refused(ApiKey::ElectLeaders, version, &elect);
        let parts = &r.replica_election_results[0].partition_result;
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.error_code == 31));
        assert_eq!(r.error_code, if version == 0 { 0 } else { 31 });
    }

    let logs: DescribeLogDirsResponse = refused(
        ApiKey::DescribeLogDirs,
        4,
        &DescribeLogDirsRequest::default(),
    );
    assert_eq!(logs.error_code, CLUSTER_AUTHORIZATION_FAILED);
    // Before v3 there is no place for it: an empty answer, as a broker's.
    let old: DescribeLogDirsResponse = refused(
        ApiKey::DescribeLogDirs,
        1,
        &DescribeLogDirsRequest::default(),
    );
    assert!(old.results.is_empty());
    let quorum: DescribeQuorumResponse =
        refused(ApiKey::DescribeQuorum, 0, &DescribeQuorumRequest::default());
    assert_eq!(quorum.error_code, CLUSTER_AUTHORIZATION_FAILED);
}

/// An IncrementalAlterConfigs of the broker's and of `topics`' configs.
fn alter_configs(topics: &[&str]) -> Bytes {
    let resource = |kind: i8, name: &str| {
        let mut r = incremental_alter_configs_request::AlterConfigsResource::default();
        r.resource_type = kind;
        r.resource_name = text(name);
        r
    };
    let mut request = IncrementalAlterConfigsRequest::default();
    request.resources.push(resource(4, "1"));
    request
        .resources
        .extend(topics.iter().map(|t| resource(2, t)));
    encode::request(ApiKey::IncrementalAlterConfigs, 1, 7, "c", &request).unwrap()
}

/// Topics starting with "ok" are allowed; the cluster is not.
fn keep(name: &str) -> bool {
    name != CLUSTER_RESOURCE && name.starts_with("ok")
}

#[test]
fn configs_judge_the_broker_resource_as_the_cluster_per_resource() {
    let ids = TopicIds::default();
    let frame = alter_configs(&["ok-a", "secret"]);
    let header = request_header(&frame).unwrap();
    let mut judged = Vec::new();
    let policed = police(&frame, &header, &ids, &mut |name| {
        judged.push(name.to_owned());
        keep(name)
    })
    .unwrap();
    assert_eq!(judged, [CLUSTER_RESOURCE, "ok-a", "secret"]);
    let Policed::Split {
        request: Some(part),
        denied,
        ..
    } = policed
    else {
        panic!("split: {policed:?}");
    };
    assert_eq!(denied, 2, "the broker and `secret`");
    let mut body = part.slice(4..);
    kafka_protocol::messages::RequestHeader::decode(&mut body, 2).unwrap();
    let sent = IncrementalAlterConfigsRequest::decode(&mut body, 1).unwrap();
    let names: Vec<&str> = sent
        .resources
        .iter()
        .map(|r| r.resource_name.as_str())
        .collect();
    assert_eq!(names, ["ok-a"], "only the allowed topic goes upstream");

    // Every resource refused: the proxy answers, each in its place.
    let frame = alter_configs(&["secret"]);
    let Policed::Answer { frame: answer, .. } =
        police(&frame, &request_header(&frame).unwrap(), &ids, &mut keep).unwrap()
    else {
        panic!("answered");
    };
    let r: IncrementalAlterConfigsResponse = response(&answer, ApiKey::IncrementalAlterConfigs, 1);
    let got: Vec<(i8, i16)> = (r.responses.iter())
        .map(|r| (r.resource_type, r.error_code))
        .collect();
    assert_eq!(got, [(4, 31), (2, 29)]);
    assert_eq!(r.responses[0].error_message.as_deref(), Some(MESSAGE));

    // The cluster allowed: the broker's resource goes on with the topic.
    let frame = alter_configs(&["ok-a"]);
    let all = police(&frame, &request_header(&frame).unwrap(), &ids, &mut |_| {
        true
    })
    .unwrap();
    assert!(
        matches!(
            all,
            Policed::Forward
                | Policed::Split {
                    request: None,
                    denied: 0,
                    ..
                }
        ),
        "goes on as it came: {all:?}"
    );
}

/// The cluster operations' table of `docs/policies.md`, from the code.
fn docs_table() -> String {
    use sluice_config::policy::Operation;
    let mut out = String::from("| operation | APIs |\n| --- | --- |\n");
    for op in Operation::CLUSTER {
        let names = |wanted: &dyn Fn(Operation) -> bool| -> Vec<&str> {
            (API_OPERATIONS.iter())
                .filter(|(_, o)| wanted(*o))
                .map(|(key, _)| crate::api_name(*key))
                .collect()
        };
        let mut cell = names(&|o| o == op).join(", ");
        let configs = names(&|o| o.on_other_resources() == Some(op));
        if !configs.is_empty() {
            cell.push_str(&format!(
                "; the non-topic resources of {}",
                configs.join(", ")
            ));
        }
        out.push_str(&format!("| `{}` | {cell} |\n", op.name()));
    }
    out
}

#[test]
fn the_docs_table_of_cluster_operations_is_the_code() {
    crate::tests::policies_doc_holds(&docs_table());
}
