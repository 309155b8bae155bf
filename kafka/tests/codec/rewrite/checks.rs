//! Responses passed on unchanged, malformed ones refused, and thousands
//! of brokers.

use super::*;

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
        assert_eq!(
            out.frame.to_bytes().as_ptr(),
            input.as_ptr(),
            "Fetch v{v}: copied"
        );
        assert_eq!(out.frame.to_bytes(), input);
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
        assert_eq!(out.frame.to_bytes(), input);
    }
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
    assert_eq!(out.frame.to_bytes().len(), plain.frame.to_bytes().len() + 1);
    assert_eq!(out.frame.to_bytes()[out.frame.to_bytes().len() - 1], 0);
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
    assert_no_upstream(&out.frame.to_bytes(), "5,000 brokers");
    let golden = frame(
        ApiKey::Metadata,
        12,
        &metadata(
            12,
            &[(1, "proxy.example", 19093), (2, "proxy.example", 19094)],
        ),
    );
    assert_eq!(out.frame.to_bytes(), golden);
}
