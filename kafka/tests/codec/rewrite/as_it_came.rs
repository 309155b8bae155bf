//! `passes_as_it_came`, the check that lets the proxy write a Produce or
//! Fetch response straight from its buffer: it says "as it came" exactly
//! when `rewrite_response` would leave the frame unchanged, and fails
//! where that fails.

use super::*;
use sluice_kafka::rewrite::passes_as_it_came;

/// Produce and Fetch responses at every version that is rewritten (those
/// that can carry endpoints), with and without endpoints.
fn cases() -> Vec<(ApiKey, i16, Bytes, bool)> {
    let mut out = Vec::new();
    for v in 10..=ApiKey::Produce.valid_versions().max {
        for with in [false, true] {
            let mut r = ProduceResponse::default();
            if with {
                r.node_endpoints = endpoints!(
                    produce_response::NodeEndpoint,
                    [(2, "kafka-2.upstream", 9093)]
                );
            }
            out.push((ApiKey::Produce, v, frame(ApiKey::Produce, v, &r), with));
        }
    }
    for v in 16..=ApiKey::Fetch.valid_versions().max {
        for with in [false, true] {
            let mut r = FetchResponse::default();
            if with {
                r.node_endpoints = endpoints!(
                    fetch_response::NodeEndpoint,
                    [(2, "kafka-2.upstream", 9093)]
                );
            }
            out.push((ApiKey::Fetch, v, frame(ApiKey::Fetch, v, &r), with));
        }
    }
    assert!(out.iter().all(|(api, v, ..)| rewrites(*api as i16, *v)));
    out
}

#[test]
fn says_as_it_came_exactly_when_the_rewrite_changes_nothing() {
    let cases = cases();
    for (api, v, input, with) in cases {
        let request = req(api, v);
        let as_it_came = passes_as_it_came(&input, &request).unwrap();
        let out = rewrite_response(&input, &request, &advertised()).unwrap();
        assert_eq!(as_it_came, !out.changed, "{api:?} v{v}");
        assert_eq!(as_it_came, !with, "{api:?} v{v}");
        if as_it_came {
            assert_eq!(out.frame.to_bytes(), input, "{api:?} v{v}");
        }
    }
}

#[test]
fn fails_where_the_rewrite_fails() {
    for (api, v, input, _) in cases() {
        let request = req(api, v);
        // Cut short, its length prefix kept true; and a bare prefix.
        let mut cut = BytesMut::from(&input[..input.len() - 3]);
        let size = (cut.len() - 4) as i32;
        cut[..4].copy_from_slice(&size.to_be_bytes());
        for bad in [cut.freeze(), Bytes::from_static(&[0, 0, 0, 0])] {
            let rewrite = rewrite_response(&bad, &request, &advertised());
            assert!(rewrite.is_err(), "{api:?} v{v}");
            let check = passes_as_it_came(&bad, &request);
            assert_eq!(check.err(), rewrite.err(), "{api:?} v{v}");
        }
    }
}

#[test]
fn other_responses_are_left_to_the_rewrite() {
    let v = ApiKey::Metadata.valid_versions().max;
    let input = frame(ApiKey::Metadata, v, &metadata(v, &UPSTREAM));
    assert!(!passes_as_it_came(&input, &req(ApiKey::Metadata, v)).unwrap());
}
