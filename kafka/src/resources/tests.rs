//! Groups and transactional ids read from requests, and the refusals: every
//! API of the table, at every version, from random valid requests; and the
//! error where each client looks for it.

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use sluice_config::policy::{API_RESOURCES, ResourceKind};

use super::*;
use crate::encode;
use crate::frame::request_header;
use crate::tests::framed;
use crate::wire::arbitrary::{self, Seeded as Rng};

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

fn answer<T: Decodable>(frame: &Bytes, api: ApiKey, version: i16) -> T {
    let mut buf = frame.slice(4..);
    let header = ResponseHeader::decode(&mut buf, api.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 7);
    let out = T::decode(&mut buf, version).unwrap();
    assert!(buf.is_empty(), "{api:?} v{version}: bytes left over");
    out
}

fn refused<Req: Encodable, Resp: Decodable>(
    api: ApiKey,
    version: i16,
    request: &Req,
    kind: ResourceKind,
) -> (Named, Resp) {
    let frame = encode::request(api, version, 7, "c", request).unwrap();
    let header = request_header(&frame).unwrap();
    let names = named(&frame, &header).unwrap();
    let out = refuse_named(&frame, &header, kind).unwrap();
    (names, answer(&out, api, version))
}

#[test]
fn every_api_of_the_table_is_read_and_refused_at_every_version() {
    for (key, _, _) in API_RESOURCES {
        let api = ApiKey::try_from(*key).unwrap();
        assert!(reads(*key), "{api:?}");
        let range = api.valid_versions();
        let mut tried = 0;
        for version in range.min..=range.max {
            for seed in 1..=8u64 {
                let mut rng = Rng(seed * 0x9e37_79b9 + u64::from(version.unsigned_abs()));
                // The layouts hold the versions kafka-protocol decodes.
                let Some(body) = arbitrary::request(api, version, &mut rng) else {
                    continue;
                };
                tried += 1;
                let frame = framed(api, version, &body);
                let header = request_header(&frame).unwrap();
                named(&frame, &header).unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
                let out = refuse_named(&frame, &header, ResourceKind::Group)
                    .unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
                let mut buf = out.slice(4..);
                ResponseHeader::decode(&mut buf, api.response_header_version(version)).unwrap();
                let size = crate::wire::check(schema_of(api), version, &buf)
                    .unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
                assert_eq!(size, buf.len(), "{api:?} v{version}: the whole answer");
            }
        }
        assert!(tried > 0, "{api:?}: no version tried");
    }
    assert!(!reads(ApiKey::Produce as i16) && !reads(ApiKey::ListGroups as i16));
}

fn schema_of(api: ApiKey) -> &'static crate::wire::Schema {
    crate::wire::response_schema(api).unwrap_or_else(|| panic!("{api:?} has no layout"))
}

/// Kafka-protocol's APIs whose names speak of groups, transactions or
/// coordinators: each is in the table, or named here as listing (ListGroups,
/// ListTransactions) or as the brokers' own (judged as the cluster).
#[test]
fn no_api_naming_groups_or_transactions_is_left_out() {
    let brokers_or_listing = [
        ApiKey::ListGroups,
        ApiKey::ListTransactions,
        ApiKey::WriteTxnMarkers,
        ApiKey::InitializeShareGroupState,
        ApiKey::ReadShareGroupState,
        ApiKey::WriteShareGroupState,
        ApiKey::DeleteShareGroupState,
        ApiKey::ReadShareGroupStateSummary,
    ];
    for api in ApiKey::iter() {
        let name = format!("{api:?}");
        let speaks = [
            "Group",
            "Txn",
            "Transaction",
            "Coordinator",
            "ProducerId",
            "Share",
        ]
        .iter()
        .any(|w| name.contains(w));
        let excluded = brokers_or_listing.contains(&api) || api == ApiKey::AllocateProducerIds;
        if speaks && !excluded {
            assert!(
                reads(api as i16),
                "{name} names groups or transactional ids"
            );
        }
    }
}

#[test]
fn a_join_is_refused_with_group_authorization_failed() {
    let mut join = JoinGroupRequest::default();
    join.group_id = GroupId(text("team-a.billing"));
    join.protocol_type = text("consumer");
    for version in 0..=9 {
        let Ok(_) = encode::request(ApiKey::JoinGroup, version, 7, "c", &join) else {
            continue;
        };
        let (names, r): (_, JoinGroupResponse) =
            refused(ApiKey::JoinGroup, version, &join, ResourceKind::Group);
        assert_eq!(names, [(ResourceKind::Group, "team-a.billing".to_owned())]);
        assert_eq!(r.error_code, 30, "v{version}");
    }
}

#[test]
fn commits_fetches_and_coordinators_carry_the_error_where_clients_look() {
    let mut commit = OffsetCommitRequest::default();
    commit.group_id = GroupId(text("g"));
    let mut topic = offset_commit_request::OffsetCommitRequestTopic::default();
    topic.name = TopicName(text("t"));
    topic.partitions = vec![Default::default(), Default::default()];
    commit.topics = vec![topic];
    let (_, r): (_, OffsetCommitResponse) =
        refused(ApiKey::OffsetCommit, 8, &commit, ResourceKind::Group);
    let codes: Vec<i16> = r.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, [30, 30]);

    let mut fetch = OffsetFetchRequest::default();
    let mut asked = offset_fetch_request::OffsetFetchRequestGroup::default();
    asked.group_id = GroupId(text("g"));
    fetch.groups = vec![asked];
    let (names, r): (_, OffsetFetchResponse) =
        refused(ApiKey::OffsetFetch, 9, &fetch, ResourceKind::Group);
    assert_eq!(names, [(ResourceKind::Group, "g".to_owned())]);
    assert_eq!(r.groups[0].error_code, 30);

    let mut find = FindCoordinatorRequest::default();
    find.key_type = 1;
    find.coordinator_keys = vec![text("tx-1"), text("tx-2")];
    let (names, r): (_, FindCoordinatorResponse) = refused(
        ApiKey::FindCoordinator,
        4,
        &find,
        ResourceKind::TransactionalId,
    );
    assert_eq!(names.len(), 2);
    assert!(
        names
            .iter()
            .all(|(k, _)| *k == ResourceKind::TransactionalId)
    );
    assert!(r.coordinators.iter().all(|c| c.error_code == 53));
    find.key = text("g");
    find.key_type = 0;
    find.coordinator_keys.clear();
    let (names, r): (_, FindCoordinatorResponse) =
        refused(ApiKey::FindCoordinator, 3, &find, ResourceKind::Group);
    assert_eq!(names, [(ResourceKind::Group, "g".to_owned())]);
    assert_eq!(r.error_code, 30);
}

#[test]
fn transactions_name_their_id_and_their_group() {
    let mut add = AddOffsetsToTxnRequest::default();
    add.transactional_id = TransactionalId(text("tx"));
    add.group_id = GroupId(text("g"));
    let (names, r): (_, AddOffsetsToTxnResponse) = refused(
        ApiKey::AddOffsetsToTxn,
        3,
        &add,
        ResourceKind::TransactionalId,
    );
    assert_eq!(
        names,
        [
            (ResourceKind::TransactionalId, "tx".to_owned()),
            (ResourceKind::Group, "g".to_owned())
        ]
    );
    assert_eq!(r.error_code, 53);
    // An idempotent producer names no transactional id: nothing to judge.
    let mut init = InitProducerIdRequest::default();
    init.transactional_id = None;
    let frame = encode::request(ApiKey::InitProducerId, 4, 7, "c", &init).unwrap();
    assert!(
        named(&frame, &request_header(&frame).unwrap())
            .unwrap()
            .is_empty()
    );
}

/// The groups' and transactional ids' table of `docs/policies.md`, from
/// the code.
fn docs_table() -> String {
    use sluice_config::policy::resource_api_names;
    let mut out = String::from("| resource | operation | APIs |\n| --- | --- | --- |\n");
    for kind in ResourceKind::EVERY {
        for op in kind.operations() {
            let apis = resource_api_names(kind, *op).join(", ");
            out.push_str(&format!(
                "| `{}` | `{}` | {apis} |\n",
                kind.key(),
                op.name()
            ));
        }
    }
    out
}

#[test]
fn the_docs_table_of_groups_and_transactional_ids_is_the_code() {
    crate::tests::policies_doc_holds(&docs_table());
}
