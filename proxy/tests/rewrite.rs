//! Address rewriting, per API and per version: the output is compared byte
//! for byte with the encoding of the expected response (the golden frame),
//! and a few literal frames pin the exact bytes across releases.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeClusterResponse, FetchResponse, FindCoordinatorResponse,
    MetadataResponse, ProduceResponse, ResponseHeader, describe_cluster_response, fetch_response,
    find_coordinator_response, metadata_response, produce_response,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use sluice_proxy::config::model::BrokerPorts;
use sluice_proxy::config::types::Port;
use sluice_proxy::kafka::frame::RequestHeader;
use sluice_proxy::kafka::rewrite::{Advertised, Learned, rewrite_response, rewrites};

/// Upstream nodes 1 and 2 are in the proxy's range (ports 19093-19094 for
/// node ids 1-2); node 7 is not.
fn advertised() -> Advertised {
    Advertised::new(
        "proxy.example",
        BrokerPorts {
            start: Port::new(19093).unwrap(),
            count: 2,
            first_node_id: 1,
        },
    )
}

const UPSTREAM: [(i32, &str, i32); 3] = [
    (1, "kafka-1.upstream", 9092),
    (2, "kafka-2.upstream", 9093),
    (7, "kafka-7.upstream", 9094),
];

fn frame<T: Encodable>(api: ApiKey, version: i16, body: &T) -> Bytes {
    let mut header = ResponseHeader::default();
    header.correlation_id = 42;
    let mut b = BytesMut::new();
    header
        .encode(&mut b, api.response_header_version(version))
        .unwrap();
    body.encode(&mut b, version).unwrap();
    let mut f = BytesMut::new();
    f.put_i32(b.len() as i32);
    f.put_slice(&b);
    f.freeze()
}

fn req(api: ApiKey, version: i16) -> RequestHeader {
    RequestHeader {
        api_key: api as i16,
        api_version: version,
        correlation_id: 42,
    }
}

fn learned_all() -> Vec<Learned> {
    UPSTREAM
        .iter()
        .map(|(id, host, port)| Learned {
            node_id: *id,
            host: (*host).to_owned(),
            port: *port,
        })
        .collect()
}

fn assert_no_upstream(bytes: &[u8], what: &str) {
    assert!(
        !bytes.windows(8).any(|w| w == b"upstream"),
        "{what}: an upstream host reached the client"
    );
}

fn metadata(version: i16, nodes: &[(i32, &str, i32)]) -> MetadataResponse {
    let mut r = MetadataResponse::default();
    r.controller_id = BrokerId(1);
    r.brokers = nodes
        .iter()
        .map(|(id, host, port)| {
            let mut b = metadata_response::MetadataResponseBroker::default();
            b.node_id = BrokerId(*id);
            b.host = StrBytes::from_string((*host).to_owned());
            b.port = *port;
            if version >= 1 {
                b.rack = Some(StrBytes::from_static_str("rack-a"));
            }
            b
        })
        .collect();
    r
}

#[test]
fn metadata_every_version() {
    let range = ApiKey::Metadata.valid_versions();
    for v in range.min..=range.max {
        assert!(rewrites(ApiKey::Metadata as i16, v));
        let input = frame(ApiKey::Metadata, v, &metadata(v, &UPSTREAM));
        let out = rewrite_response(&input, &req(ApiKey::Metadata, v), &advertised()).unwrap();
        let golden = frame(
            ApiKey::Metadata,
            v,
            &metadata(
                v,
                &[(1, "proxy.example", 19093), (2, "proxy.example", 19094)],
            ),
        );
        assert_eq!(out.frame, golden, "Metadata v{v}");
        assert_eq!(out.learned, learned_all(), "Metadata v{v}");
        assert_eq!(out.unmapped, [7], "Metadata v{v}");
        assert_no_upstream(&out.frame, &format!("Metadata v{v}"));
    }
}

fn coordinator(version: i16, node: (i32, &str, i32), error: i16) -> FindCoordinatorResponse {
    let mut r = FindCoordinatorResponse::default();
    if version < 4 {
        r.node_id = BrokerId(node.0);
        r.host = StrBytes::from_string(node.1.to_owned());
        r.port = node.2;
        r.error_code = error;
    } else {
        let mut c = find_coordinator_response::Coordinator::default();
        c.key = StrBytes::from_static_str("group-1");
        c.node_id = BrokerId(node.0);
        c.host = StrBytes::from_string(node.1.to_owned());
        c.port = node.2;
        c.error_code = error;
        r.coordinators = vec![c];
    }
    r
}

fn not_available(version: i16) -> FindCoordinatorResponse {
    let mut r = coordinator(version, (-1, "", -1), 15);
    let msg = Some(StrBytes::from_static_str(
        "coordinator is outside the proxy's broker port range",
    ));
    if version < 4 {
        if version >= 1 {
            r.error_message = msg;
        }
    } else {
        r.coordinators[0].error_message = msg;
    }
    r
}

#[test]
fn find_coordinator_every_version_single_and_batched() {
    let range = ApiKey::FindCoordinator.valid_versions();
    for v in range.min..=range.max {
        let input = frame(ApiKey::FindCoordinator, v, &coordinator(v, UPSTREAM[1], 0));
        let out =
            rewrite_response(&input, &req(ApiKey::FindCoordinator, v), &advertised()).unwrap();
        let golden = frame(
            ApiKey::FindCoordinator,
            v,
            &coordinator(v, (2, "proxy.example", 19094), 0),
        );
        assert_eq!(out.frame, golden, "FindCoordinator v{v}");
        assert_no_upstream(&out.frame, &format!("FindCoordinator v{v}"));

        // A coordinator outside the range becomes COORDINATOR_NOT_AVAILABLE.
        let input = frame(ApiKey::FindCoordinator, v, &coordinator(v, UPSTREAM[2], 0));
        let out =
            rewrite_response(&input, &req(ApiKey::FindCoordinator, v), &advertised()).unwrap();
        assert_eq!(
            out.frame,
            frame(ApiKey::FindCoordinator, v, &not_available(v)),
            "FindCoordinator v{v}"
        );
        assert_eq!(out.unmapped, [7]);
    }
}

fn cluster(nodes: &[(i32, &str, i32)]) -> DescribeClusterResponse {
    let mut r = DescribeClusterResponse::default();
    r.cluster_id = StrBytes::from_static_str("cluster-a");
    r.brokers = nodes
        .iter()
        .map(|(id, host, port)| {
            let mut b = describe_cluster_response::DescribeClusterBroker::default();
            b.broker_id = BrokerId(*id);
            b.host = StrBytes::from_string((*host).to_owned());
            b.port = *port;
            b
        })
        .collect();
    r
}

#[test]
fn describe_cluster_every_version() {
    let range = ApiKey::DescribeCluster.valid_versions();
    for v in range.min..=range.max {
        let input = frame(ApiKey::DescribeCluster, v, &cluster(&UPSTREAM));
        let out =
            rewrite_response(&input, &req(ApiKey::DescribeCluster, v), &advertised()).unwrap();
        let golden = frame(
            ApiKey::DescribeCluster,
            v,
            &cluster(&[(1, "proxy.example", 19093), (2, "proxy.example", 19094)]),
        );
        assert_eq!(out.frame, golden, "DescribeCluster v{v}");
        assert_eq!(out.learned, learned_all());
    }
}

#[test]
fn produce_node_endpoints_from_v10() {
    let endpoints = |nodes: &[(i32, &str, i32)]| -> Vec<produce_response::NodeEndpoint> {
        nodes
            .iter()
            .map(|(id, host, port)| {
                let mut e = produce_response::NodeEndpoint::default();
                e.node_id = BrokerId(*id);
                e.host = StrBytes::from_string((*host).to_owned());
                e.port = *port;
                e
            })
            .collect()
    };
    let range = ApiKey::Produce.valid_versions();
    for v in range.min..=range.max {
        assert_eq!(rewrites(ApiKey::Produce as i16, v), v >= 10, "Produce v{v}");
        if v < 10 {
            continue;
        }
        let mut r = ProduceResponse::default();
        r.node_endpoints = endpoints(&UPSTREAM);
        let out = rewrite_response(
            &frame(ApiKey::Produce, v, &r),
            &req(ApiKey::Produce, v),
            &advertised(),
        )
        .unwrap();
        let mut g = ProduceResponse::default();
        g.node_endpoints = endpoints(&[(1, "proxy.example", 19093), (2, "proxy.example", 19094)]);
        assert_eq!(out.frame, frame(ApiKey::Produce, v, &g), "Produce v{v}");
        assert_no_upstream(&out.frame, &format!("Produce v{v}"));
    }
}

#[test]
fn fetch_node_endpoints_from_v16() {
    let endpoints = |nodes: &[(i32, &str, i32)]| -> Vec<fetch_response::NodeEndpoint> {
        nodes
            .iter()
            .map(|(id, host, port)| {
                let mut e = fetch_response::NodeEndpoint::default();
                e.node_id = BrokerId(*id);
                e.host = StrBytes::from_string((*host).to_owned());
                e.port = *port;
                e
            })
            .collect()
    };
    let range = ApiKey::Fetch.valid_versions();
    for v in range.min..=range.max {
        assert_eq!(rewrites(ApiKey::Fetch as i16, v), v >= 16, "Fetch v{v}");
        if v < 16 {
            continue;
        }
        let mut r = FetchResponse::default();
        r.node_endpoints = endpoints(&UPSTREAM);
        let out = rewrite_response(
            &frame(ApiKey::Fetch, v, &r),
            &req(ApiKey::Fetch, v),
            &advertised(),
        )
        .unwrap();
        let mut g = FetchResponse::default();
        g.node_endpoints = endpoints(&[(1, "proxy.example", 19093), (2, "proxy.example", 19094)]);
        assert_eq!(out.frame, frame(ApiKey::Fetch, v, &g), "Fetch v{v}");
    }
}

/// The usual Produce and Fetch response (no leader moved, so no endpoints)
/// is checked and passed on as it came: the same bytes, not counted as a
/// rewrite; a malformed one is still refused, as is one with a tail.
#[test]
fn produce_and_fetch_responses_without_endpoints_pass_unchanged_but_checked() {
    for v in 16..=ApiKey::Fetch.valid_versions().max {
        let mut r = FetchResponse::default();
        r.responses = vec![
            fetch_response::FetchableTopicResponse::default().with_partitions(vec![
                fetch_response::PartitionData::default()
                    .with_partition_index(3)
                    .with_high_watermark(1_000)
                    .with_records(Some(Bytes::from_static(&[7u8; 300]))),
            ]),
        ];
        let input = frame(ApiKey::Fetch, v, &r);
        let out = rewrite_response(&input, &req(ApiKey::Fetch, v), &advertised()).unwrap();
        assert!(!out.changed, "Fetch v{v}");
        assert_eq!(out.frame.as_ptr(), input.as_ptr(), "Fetch v{v}: copied");
        assert_eq!(out.frame, input);
        assert!(out.learned.is_empty() && out.unmapped.is_empty());

        // Cut inside the records: the layout check still runs.
        let mut cut = BytesMut::from(&input[..input.len() - 40]);
        let size = (cut.len() - 4) as i32;
        cut[..4].copy_from_slice(&size.to_be_bytes());
        let err =
            rewrite_response(&cut.freeze(), &req(ApiKey::Fetch, v), &advertised()).unwrap_err();
        assert!(err.reason.contains("bytes needed"), "Fetch v{v}: {err}");

        // More than a few bytes after the message: refused as before.
        let mut long = BytesMut::from(&input[..]);
        long.put_slice(&[0u8; 17]);
        let size = (long.len() - 4) as i32;
        long[..4].copy_from_slice(&size.to_be_bytes());
        let err =
            rewrite_response(&long.freeze(), &req(ApiKey::Fetch, v), &advertised()).unwrap_err();
        assert!(err.reason.contains("left over"), "Fetch v{v}: {err}");
    }
    for v in 10..=ApiKey::Produce.valid_versions().max {
        let input = frame(ApiKey::Produce, v, &ProduceResponse::default());
        let out = rewrite_response(&input, &req(ApiKey::Produce, v), &advertised()).unwrap();
        assert!(!out.changed, "Produce v{v}");
        assert_eq!(out.frame, input);
    }
}

#[test]
fn literal_golden_frames_pin_the_bytes() {
    // Metadata v1 with node 1 at kafka-1.upstream:9092, correlation id 42.
    let input = frame(ApiKey::Metadata, 1, &metadata(1, &UPSTREAM[..1]));
    let out = rewrite_response(&input, &req(ApiKey::Metadata, 1), &advertised()).unwrap();
    assert_eq!(
        hex(&out.frame),
        "0000002f0000002a0000000100000001000d70726f78792e6578616d706c6500004a9500067261636b2d61\
         0000000100000000"
    );
    // FindCoordinator v3 (flexible) pointing at node 2.
    let input = frame(ApiKey::FindCoordinator, 3, &coordinator(3, UPSTREAM[1], 0));
    let out = rewrite_response(&input, &req(ApiKey::FindCoordinator, 3), &advertised()).unwrap();
    assert_eq!(
        hex(&out.frame),
        "000000230000002a0000000000000001000000020e70726f78792e6578616d706c6500004a9600"
    );
}

#[test]
fn rewriting_is_deterministic_and_idempotent() {
    let input = frame(ApiKey::Metadata, 12, &metadata(12, &UPSTREAM));
    let a = rewrite_response(&input, &req(ApiKey::Metadata, 12), &advertised()).unwrap();
    let b = rewrite_response(&input, &req(ApiKey::Metadata, 12), &advertised()).unwrap();
    assert_eq!(a.frame, b.frame);
    let again = rewrite_response(&a.frame, &req(ApiKey::Metadata, 12), &advertised()).unwrap();
    assert_eq!(again.frame, a.frame);
}

#[test]
fn malformed_responses_are_errors_not_panics() {
    let input = frame(ApiKey::Metadata, 9, &metadata(9, &UPSTREAM));
    for cut in [5, 8, 12, input.len() - 1] {
        let mut truncated = BytesMut::from(&input[..cut]);
        truncated[..4].copy_from_slice(&((cut - 4) as i32).to_be_bytes());
        assert!(
            rewrite_response(
                &truncated.freeze(),
                &req(ApiKey::Metadata, 9),
                &advertised()
            )
            .is_err()
        );
    }
    // A byte or two the schema lacks is carried over; a long tail is refused.
    let with_tail = |n: usize| {
        let mut t = BytesMut::from(&input[..]);
        t.extend_from_slice(&vec![0u8; n]);
        let len = (t.len() - 4) as i32;
        t[..4].copy_from_slice(&len.to_be_bytes());
        t.freeze()
    };
    let out = rewrite_response(&with_tail(1), &req(ApiKey::Metadata, 9), &advertised()).unwrap();
    let plain = rewrite_response(&input, &req(ApiKey::Metadata, 9), &advertised()).unwrap();
    assert_eq!(out.frame.len(), plain.frame.len() + 1);
    assert_eq!(out.frame[out.frame.len() - 1], 0);
    let err =
        rewrite_response(&with_tail(17), &req(ApiKey::Metadata, 9), &advertised()).unwrap_err();
    assert_eq!(err.reason, "17 bytes left over after the message");
}

/// A flexible response header whose tagged field has a tag beyond
/// `i32::MAX`: kafka-protocol reads it but writes back only the tags it
/// holds as non-negative while counting them all, so a rewritten response
/// would reach the client malformed. Refused instead (found by the `rewrite`
/// fuzz target, seed `fuzz/seeds/rewrite/header-tag-beyond-i32`).
#[test]
fn a_response_header_tag_beyond_i32_is_refused() {
    let body = frame(ApiKey::Metadata, 12, &metadata(12, &UPSTREAM));
    // Correlation id, then one tagged field: tag 0x8fff_ffff, size 0.
    let mut f = BytesMut::new();
    f.put_i32(0);
    f.put_i32(42);
    f.put_slice(&[1, 0xff, 0xff, 0xff, 0xff, 0x08, 0]);
    f.put_slice(&body[9..]); // the body after the original (empty) header
    let len = (f.len() - 4) as i32;
    f[..4].copy_from_slice(&len.to_be_bytes());
    let err = rewrite_response(&f.freeze(), &req(ApiKey::Metadata, 12), &advertised()).unwrap_err();
    assert_eq!(
        err.reason, "ResponseHeader: tag 2415919103 is out of range",
        "{err}"
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn thousands_of_brokers_are_rewritten_or_dropped_without_trouble() {
    let mut nodes: Vec<(i32, String, i32)> = (0..5000)
        .map(|i| (i, format!("kafka-{i}.upstream"), 9092))
        .collect();
    nodes.push((i32::MAX, "max.upstream".into(), 1));
    nodes.push((-7, "negative.upstream".into(), 1));
    let refs: Vec<(i32, &str, i32)> = nodes.iter().map(|(i, h, p)| (*i, h.as_str(), *p)).collect();
    let input = frame(ApiKey::Metadata, 12, &metadata(12, &refs));
    let out = rewrite_response(&input, &req(ApiKey::Metadata, 12), &advertised()).unwrap();
    // Only nodes 1 and 2 have proxy ports; the other 5,000 are dropped and reported.
    assert_eq!(out.unmapped.len(), 5000);
    assert_eq!(out.learned.len(), 5002);
    assert_no_upstream(&out.frame, "5,000 brokers");
    let golden = frame(
        ApiKey::Metadata,
        12,
        &metadata(
            12,
            &[(1, "proxy.example", 19093), (2, "proxy.example", 19094)],
        ),
    );
    assert_eq!(out.frame, golden);
}
