use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, ResponseHeader, api_versions_response,
};
use kafka_protocol::protocol::Decodable;

use super::*;

fn frame(version: i16, keys: &[(ApiKey, i16, i16)]) -> Bytes {
    let mut r = ApiVersionsResponse::default();
    r.api_keys = keys
        .iter()
        .map(|(k, min, max)| {
            let mut a = api_versions_response::ApiVersion::default();
            a.api_key = *k as i16;
            a.min_version = *min;
            a.max_version = *max;
            a
        })
        .collect();
    encode::response(ApiKey::ApiVersions, version, 9, &r).unwrap()
}

/// What a Kafka 3.x broker offers of the APIs whose oldest versions
/// Kafka 4.0 removed.
const OLD_BROKER: [(ApiKey, i16, i16); 11] = [
    (ApiKey::Produce, 0, 11),
    (ApiKey::Fetch, 0, 17),
    (ApiKey::ListOffsets, 0, 9),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::OffsetCommit, 0, 9),
    (ApiKey::OffsetFetch, 0, 9),
    (ApiKey::OffsetForLeaderEpoch, 0, 4),
    (ApiKey::CreateTopics, 0, 7),
    (ApiKey::DeleteTopics, 0, 6),
    (ApiKey::DescribeConfigs, 0, 4),
    (ApiKey::ApiVersions, 0, 3),
];

#[test]
fn the_oldest_versions_the_proxy_cannot_decode_are_not_offered() {
    for v in 0..=ApiKey::ApiVersions.valid_versions().max {
        let out = cap_api_versions(&frame(v, &OLD_BROKER), v, &|_| true).unwrap();
        let golden = frame(
            v,
            &[
                (ApiKey::Produce, 3, 11),
                (ApiKey::Fetch, 4, 17),
                (ApiKey::ListOffsets, 1, 9),
                (ApiKey::Metadata, 0, 12),
                (ApiKey::OffsetCommit, 2, 9),
                (ApiKey::OffsetFetch, 1, 9),
                (ApiKey::OffsetForLeaderEpoch, 2, 4),
                (ApiKey::CreateTopics, 2, 7),
                (ApiKey::DeleteTopics, 1, 6),
                (ApiKey::DescribeConfigs, 1, 4),
                (ApiKey::ApiVersions, 0, 3),
            ],
        );
        assert_eq!(out, golden, "ApiVersions v{v}");
    }
    // Not decoded: offered as the broker offers it.
    let out = cap_api_versions(&frame(3, &OLD_BROKER), 3, &|_| false).unwrap();
    assert_eq!(out, frame(3, &OLD_BROKER));
}

#[test]
fn an_api_with_no_version_left_is_not_offered() {
    // A broker that serves only Fetch v0-3 and Produce v0-2.
    let input = frame(
        3,
        &[
            (ApiKey::Produce, 0, 2),
            (ApiKey::Fetch, 0, 3),
            (ApiKey::Metadata, 1, 9),
        ],
    );
    let out = cap_api_versions(&input, 3, &|_| true).unwrap();
    assert_eq!(out, frame(3, &[(ApiKey::Metadata, 1, 9)]));
    // Above what the proxy decodes, and beyond it.
    let max = ApiKey::Fetch.valid_versions().max;
    let input = frame(3, &[(ApiKey::Fetch, max + 1, max + 4)]);
    assert_eq!(
        cap_api_versions(&input, 3, &|_| true).unwrap(),
        frame(3, &[])
    );
}

#[test]
fn only_the_versions_offered_are_served() {
    for api in ApiKey::iter() {
        let range = api.valid_versions();
        assert_eq!(served(api as i16, range.min), Served::Yes, "{api:?}");
        assert_eq!(served(api as i16, range.max), Served::Yes, "{api:?}");
        let outside = if api == ApiKey::ApiVersions {
            Served::Refused
        } else {
            Served::Closed {
                min: range.min,
                max: range.max,
            }
        };
        assert_eq!(served(api as i16, range.max + 1), outside, "{api:?}");
        assert_eq!(served(api as i16, -1), outside, "{api:?}");
        if range.min > 0 {
            assert_eq!(served(api as i16, range.min - 1), outside, "{api:?}");
        }
    }
    let fetch = ApiKey::Fetch.valid_versions().max;
    assert_eq!(
        served(ApiKey::Fetch as i16, 3),
        Served::Closed { min: 4, max: fetch }
    );
    assert!(matches!(
        served(ApiKey::Produce as i16, 2),
        Served::Closed { min: 3, .. }
    ));
    // An API the proxy does not know is for what judges those.
    assert_eq!(served(9999, 0), Served::Yes);
}

#[test]
fn an_api_versions_the_proxy_cannot_read_is_answered_as_kafka_does() {
    let answer = unsupported_api_versions(42);
    let mut body = answer.slice(4..);
    let h = ResponseHeader::decode(&mut body, 0).unwrap();
    assert_eq!(h.correlation_id, 42);
    let r = ApiVersionsResponse::decode(&mut body, 0).unwrap();
    assert!(body.is_empty());
    assert_eq!(r.error_code, UNSUPPORTED_VERSION);
    let own = &r.api_keys[..];
    assert_eq!(own.len(), 1);
    assert_eq!(own[0].api_key, ApiKey::ApiVersions as i16);
    assert_eq!(
        (own[0].min_version, own[0].max_version),
        (0, ApiKey::ApiVersions.valid_versions().max)
    );
    // Passes a cap unchanged, as a broker's error answer does.
    assert_eq!(cap_api_versions(&answer, 4, &|_| true).unwrap(), answer);
}
