use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, MetadataRequest, MetadataResponse, RequestHeader as KHeader, ResponseHeader, TopicName,
    metadata_request, metadata_response,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use sluice_config::policy::{API_OPERATIONS, API_RESOURCES};

use super::{Tenant, refuses, renames};
use crate::frame::request_header;
use crate::tests::framed;
use crate::wire::arbitrary::{self, Seeded as Rng};

fn request_frame<T: Encodable>(api: ApiKey, version: i16, body: &T) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i32(0);
    let mut header = KHeader::default();
    header.request_api_key = api as i16;
    header.request_api_version = version;
    header.correlation_id = 7;
    header.client_id = Some(StrBytes::from_static_str("c"));
    header
        .encode(&mut out, api.request_header_version(version))
        .unwrap();
    body.encode(&mut out, version).unwrap();
    let len = i32::try_from(out.len() - 4).unwrap();
    out[..4].copy_from_slice(&len.to_be_bytes());
    out.freeze()
}

fn response_frame<T: Encodable>(api: ApiKey, version: i16, body: &T) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i32(0);
    let mut header = ResponseHeader::default();
    header.correlation_id = 7;
    header
        .encode(&mut out, api.response_header_version(version))
        .unwrap();
    body.encode(&mut out, version).unwrap();
    let len = i32::try_from(out.len() - 4).unwrap();
    out[..4].copy_from_slice(&len.to_be_bytes());
    out.freeze()
}

fn topic(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

#[test]
fn a_metadata_request_names_the_tenants_topics_and_an_escape_stays_inside() {
    let tenant = Tenant::new("team-a.");
    for version in [1, 9, 12] {
        let mut req = MetadataRequest::default();
        req.topics = Some(
            ["orders", "team-b.orders"]
                .iter()
                .map(|n| {
                    metadata_request::MetadataRequestTopic::default().with_name(Some(topic(n)))
                })
                .collect(),
        );
        let frame = request_frame(ApiKey::Metadata, version, &req);
        let header = request_header(&frame).unwrap();
        let out = tenant.request(&frame, &header).unwrap();
        let mut buf = out.slice(4..);
        KHeader::decode(&mut buf, ApiKey::Metadata.request_header_version(version)).unwrap();
        let got = MetadataRequest::decode(&mut buf, version).unwrap();
        let names: Vec<_> = got
            .topics
            .unwrap()
            .into_iter()
            .map(|t| t.name.unwrap().0.to_string())
            .collect();
        assert_eq!(
            names,
            ["team-a.orders", "team-a.team-b.orders"],
            "v{version}"
        );
        assert_eq!(
            u32::from_be_bytes(out[..4].try_into().unwrap()) as usize,
            out.len() - 4
        );
    }
}

#[test]
fn a_metadata_response_lists_only_the_tenants_topics_unprefixed() {
    let tenant = Tenant::new("team-a.");
    for version in [1, 9, 12] {
        let mut resp = MetadataResponse::default();
        resp.topics = ["team-a.orders", "team-b.orders", "orders", "team-a.x"]
            .iter()
            .map(|n| {
                let mut t =
                    metadata_response::MetadataResponseTopic::default().with_name(Some(topic(n)));
                t.error_code = 3;
                t
            })
            .collect();
        let frame = response_frame(ApiKey::Metadata, version, &resp);
        let header = crate::frame::RequestHeader {
            api_key: 3,
            api_version: version,
            correlation_id: 7,
        };
        let out = tenant.response(&frame, &header).unwrap();
        let mut buf = out.slice(4..);
        ResponseHeader::decode(&mut buf, ApiKey::Metadata.response_header_version(version))
            .unwrap();
        let got = MetadataResponse::decode(&mut buf, version).unwrap();
        assert!(buf.is_empty());
        let names: Vec<_> = got
            .topics
            .iter()
            .map(|t| t.name.clone().unwrap().0.to_string())
            .collect();
        assert_eq!(names, ["orders", "x"], "v{version}");
    }
}

#[test]
fn error_messages_lose_the_prefix_only_where_a_name_starts() {
    let tenant = Tenant::new("a.");
    assert_eq!(
        tenant
            .unprefixed_text("Topic 'a.orders' and a.x, not data.y")
            .as_deref(),
        Some("Topic 'orders' and x, not data.y")
    );
    assert_eq!(tenant.unprefixed_text("nothing here"), None);
}

/// Every API a topic policy judges, and every API naming groups or
/// transactional ids, is renamed: the layouts carry their names.
#[test]
fn every_api_that_names_topics_groups_or_transactional_ids_is_renamed() {
    let missing: Vec<_> = API_OPERATIONS
        .iter()
        .map(|(k, _)| *k)
        .chain(API_RESOURCES.iter().map(|(k, _, _)| *k))
        .filter(|k| !renames(*k) && !refuses(*k))
        .map(crate::api_name)
        .collect();
    assert!(
        missing.is_empty(),
        "neither renamed nor refused: {missing:?}"
    );
    assert!(refuses(ApiKey::CreateAcls as i16) && refuses(ApiKey::DescribeLogDirs as i16));
    assert!(!refuses(ApiKey::DeleteGroups as i16) && !refuses(ApiKey::CreateTopics as i16));
    assert!(renames(ApiKey::ListGroups as i16) && renames(ApiKey::ListTransactions as i16));
    assert!(!renames(ApiKey::ApiVersions as i16) && !renames(ApiKey::DescribeCluster as i16));
}

/// Random valid requests of every renamed API at every version: prefixed,
/// they are valid messages of the same layout; the prefix taken off again,
/// they are the bytes they were.
#[test]
fn every_renamed_request_at_every_version_round_trips() {
    let tenant = Tenant::new("tenant-7.");
    let mut tried = 0;
    for api in ApiKey::iter().filter(|a| renames(*a as i16)) {
        let range = api.valid_versions();
        for version in range.min..=range.max {
            for seed in 1..=6u64 {
                let mut rng =
                    Rng(seed * 0x9e37_79b9 + u64::from(version.unsigned_abs()) + api as u64);
                let Some(body) = arbitrary::request(api, version, &mut rng) else {
                    continue;
                };
                tried += 1;
                let frame = framed(api, version, &body);
                let header = request_header(&frame).unwrap();
                let up = tenant
                    .request(&frame, &header)
                    .unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
                let schema = crate::wire::request_schema(api).unwrap();
                let at = frame.len() - body.len();
                let size = crate::wire::check(schema, version, &up[at..])
                    .unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
                assert_eq!(size, up.len() - at, "{api:?} v{version}");
                let mut down = BytesMut::new();
                let mut names = super::Down(&tenant);
                crate::wire::rename(schema, version, &up[at..], &mut names, &mut down).unwrap();
                assert_eq!(&down[..], &body[..], "{api:?} v{version}: seed {seed}");
            }
        }
    }
    assert!(tried > 1000, "{tried}");
}

/// Random valid responses of every renamed API at every version: every name
/// prefixed and taken off again gives the bytes they were, and the
/// prefixed ones are valid messages of the same layout.
#[test]
fn every_renamed_response_at_every_version_round_trips() {
    let tenant = Tenant::new("tenant-7.");
    let mut tried = 0;
    for api in ApiKey::iter().filter(|a| renames(*a as i16)) {
        let Some(schema) = crate::wire::response_schema(api) else {
            continue;
        };
        let range = api.valid_versions();
        for version in range.min..=range.max {
            for seed in 1..=6u64 {
                let mut rng =
                    Rng(seed * 0x51_7cc1_b727 + u64::from(version.unsigned_abs()) + api as u64);
                let Some(body) = arbitrary::response(api, version, &mut rng) else {
                    continue;
                };
                tried += 1;
                let mut up = BytesMut::new();
                crate::wire::rename(schema, version, &body, &mut super::Up(&tenant), &mut up)
                    .unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
                let size = crate::wire::check(schema, version, &up)
                    .unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
                assert_eq!(size, up.len(), "{api:?} v{version}");
                let mut down = BytesMut::new();
                crate::wire::rename(schema, version, &up, &mut super::Down(&tenant), &mut down)
                    .unwrap();
                assert_eq!(&down[..], &body[..], "{api:?} v{version}: seed {seed}");
            }
        }
    }
    assert!(tried > 1000, "{tried}");
}

/// The table of docs/tenancy.md, rendered from the code: every API a
/// tenant's names are renamed in, and every API refused to tenants.
#[test]
fn the_docs_hold_the_api_table() {
    let list = |keep: &dyn Fn(i16) -> bool| {
        let names: Vec<String> = ApiKey::iter()
            .filter(|a| keep(*a as i16))
            .map(|a| format!("{a:?}"))
            .collect();
        names.join(", ")
    };
    let table = format!(
        "| renamed (prefixed up, unprefixed down) | {} |\n| refused (CLUSTER_AUTHORIZATION_FAILED) | {} |\n",
        list(&|k| renames(k) && !refuses(k)),
        list(&|k| refuses(k)),
    );
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/tenancy.md");
    let doc = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        doc.contains(&table),
        "docs/tenancy.md must hold this table, as the code has it:\n{table}"
    );
}

/// KIP-848's regular expression is matched by the broker against whole
/// topic names: wrapped, only the tenant's names can match it; given back
/// as the client wrote it.
#[test]
fn a_topic_regex_is_confined_to_the_tenants_names() {
    let tenant = Tenant::new("team-a.");
    let mut up = super::Up(&tenant);
    let wrapped =
        match crate::wire::Names::name(&mut up, crate::wire::Entity::TopicRegex, "orders.*") {
            crate::wire::Renamed::To(r) => r,
            other => panic!("{other:?}"),
        };
    assert_eq!(wrapped, "team-a\\.(?:orders.*)");
    let mut down = super::Down(&tenant);
    let back = crate::wire::Names::name(&mut down, crate::wire::Entity::TopicRegex, &wrapped);
    assert_eq!(back, crate::wire::Renamed::To("orders.*".to_owned()));
}

/// A Produce request renamed as it streams (every version naming topics,
/// two topics of two partitions each, with and without a transactional
/// id), cut into steps as a connection would see it arrive: the size said
/// first is the size sent, and the request decodes to what the held path
/// makes of it.
#[test]
fn a_produce_renamed_as_it_streams_is_the_held_rename() {
    use super::produce::{Step, head, streams_renamed};
    use kafka_protocol::messages::{ProduceRequest, produce_request};
    let tenant = Tenant::new("team-a.");
    for version in (3..=12).filter(|v| streams_renamed(*v)) {
        for txn in [None, Some("tx-1")] {
            let mut req = ProduceRequest::default();
            req.transactional_id = txn
                .map(|t| kafka_protocol::messages::TransactionalId(StrBytes::from_static_str(t)));
            req.acks = -1;
            req.timeout_ms = 1000;
            req.topic_data = ["orders", &"x".repeat(120)]
                .iter()
                .map(|name| {
                    let mut t = produce_request::TopicProduceData::default();
                    t.name = topic(name);
                    t.partition_data = (0..2)
                        .map(|i| {
                            let mut p = produce_request::PartitionProduceData::default();
                            p.index = i;
                            p.records = Some(Bytes::from(vec![7u8; 300 + i as usize]));
                            p
                        })
                        .collect();
                    t
                })
                .collect();
            let frame = request_frame(ApiKey::Produce, version, &req);
            let header = request_header(&frame).unwrap();
            let held = tenant.request(&frame, &header).unwrap();
            let (h, mut walk) = head(&frame, version, "team-a.").unwrap().unwrap();
            let mut out = BytesMut::new();
            out.put_i32(h.size);
            let mut at = 0;
            let apply = |step: Step, at: &mut usize, out: &mut BytesMut| match step {
                Step::Pass(n) | Step::Records(n) => {
                    out.put_slice(&frame[*at..*at + n]);
                    *at += n;
                }
                Step::Replace(n, with) => {
                    out.put_slice(&with);
                    *at += n;
                }
                Step::End => {}
            };
            for step in h.steps {
                apply(step, &mut at, &mut out);
            }
            loop {
                let step = walk
                    .next(&frame[at..])
                    .unwrap()
                    .expect("a whole frame is enough");
                if step == Step::End {
                    break;
                }
                apply(step, &mut at, &mut out);
            }
            assert_eq!(at, frame.len(), "v{version}: the whole frame walked");
            // The proxy puts the size in the frame's own length prefix.
            let mut sent = BytesMut::new();
            sent.put_slice(&out[..4]);
            sent.put_slice(&out[8..]);
            let sent = sent.freeze();
            assert_eq!(
                u32::from_be_bytes(sent[..4].try_into().unwrap()) as usize,
                sent.len() - 4,
                "v{version} txn {txn:?}: the size said first is the size sent"
            );
            let decode = |f: &Bytes| {
                let mut b = f.slice(4..);
                KHeader::decode(&mut b, ApiKey::Produce.request_header_version(version)).unwrap();
                let r = ProduceRequest::decode(&mut b, version).unwrap();
                assert!(b.is_empty(), "v{version}: bytes left");
                r
            };
            assert_eq!(decode(&sent), decode(&held), "v{version} txn {txn:?}");
        }
    }
}
