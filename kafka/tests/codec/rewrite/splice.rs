//! Produce and Fetch responses with endpoints: only their tagged fields are
//! rewritten, and a large response goes out in pieces that share its records
//! with the frame read from the upstream, never copied. The bytes are those
//! of a full decode, rewrite and encode by kafka-protocol.

use super::*;

/// A Fetch response with `records` bytes of records, these endpoints, and
/// two tags the crate does not know.
fn fetch(records: usize, nodes: &[(i32, &str, i32)]) -> FetchResponse {
    let mut r = FetchResponse::default();
    r.responses = vec![
        fetch_response::FetchableTopicResponse::default().with_partitions(vec![
            fetch_response::PartitionData::default()
                .with_partition_index(0)
                .with_high_watermark(1_000)
                .with_records(Some(Bytes::from(vec![7u8; records]))),
        ]),
    ];
    r.node_endpoints = endpoints!(fetch_response::NodeEndpoint, nodes);
    r.unknown_tagged_fields
        .insert(9, Bytes::from_static(b"nine"));
    r.unknown_tagged_fields
        .insert(3, Bytes::from_static(b"three"));
    r
}

#[test]
fn a_large_fetch_response_shares_its_records_and_has_the_crates_bytes() {
    let v = ApiKey::Fetch.valid_versions().max;
    let input = frame(ApiKey::Fetch, v, &fetch(1 << 20, &UPSTREAM));
    let out = rewrite_response(&input, &req(ApiKey::Fetch, v), &advertised()).unwrap();
    assert!(out.changed);
    assert_eq!(out.unmapped, vec![7]);
    assert_eq!(out.learned, learned_all());
    let golden = frame(
        ApiKey::Fetch,
        v,
        &fetch(
            1 << 20,
            &[(1, "proxy.example", 19093), (2, "proxy.example", 19094)],
        ),
    );
    assert_eq!(out.frame.to_bytes(), golden);
    assert_eq!(out.frame.len(), golden.len());
    // Length prefix, the records shared with the input, the new tags.
    assert_eq!(out.frame.parts().len(), 3);
    assert!(out.frame.shares(&input));
    assert!(out.frame.parts()[1].len() > 1 << 20);
    assert_no_upstream(&out.frame.to_bytes(), "Fetch");
}

#[test]
fn a_small_fetch_response_is_one_piece_and_every_endpoint_dropped_drops_the_tag() {
    for v in 16..=ApiKey::Fetch.valid_versions().max {
        let input = frame(ApiKey::Fetch, v, &fetch(300, &UPSTREAM[2..]));
        let out = rewrite_response(&input, &req(ApiKey::Fetch, v), &advertised()).unwrap();
        assert_eq!(out.frame.parts().len(), 1, "Fetch v{v}");
        assert!(!out.frame.shares(&input));
        assert_eq!(out.unmapped, vec![7]);
        // As kafka-protocol writes an empty list: no tag at all.
        assert_eq!(
            out.frame.to_bytes(),
            frame(ApiKey::Fetch, v, &fetch(300, &[])),
            "Fetch v{v}"
        );
    }
}

#[test]
fn produce_responses_are_spliced_alike() {
    for v in 10..=ApiKey::Produce.valid_versions().max {
        let mut r = ProduceResponse::default();
        r.node_endpoints = endpoints!(
            produce_response::NodeEndpoint,
            [(2, "kafka-2.upstream", 9093)]
        );
        let input = frame(ApiKey::Produce, v, &r);
        let out = rewrite_response(&input, &req(ApiKey::Produce, v), &advertised()).unwrap();
        r.node_endpoints = endpoints!(
            produce_response::NodeEndpoint,
            [(2, "proxy.example", 19094)]
        );
        assert_eq!(
            out.frame.to_bytes(),
            frame(ApiKey::Produce, v, &r),
            "Produce v{v}"
        );
    }
}

#[test]
fn bytes_after_the_message_follow_the_new_tags() {
    let v = ApiKey::Fetch.valid_versions().max;
    let mut input = BytesMut::from(&frame(ApiKey::Fetch, v, &fetch(100_000, &UPSTREAM[..1]))[..]);
    input.put_slice(&[0xAB, 0xCD]);
    let size = (input.len() - 4) as i32;
    input[..4].copy_from_slice(&size.to_be_bytes());
    let input = input.freeze();
    let out = rewrite_response(&input, &req(ApiKey::Fetch, v), &advertised()).unwrap();
    let bytes = out.frame.to_bytes();
    assert_eq!(&bytes[bytes.len() - 2..], &[0xAB, 0xCD]);
    let declared = i32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
    assert_eq!(declared, bytes.len() - 4);
}
