//! `throttle_time_ms` in the responses of requests the proxy throttles
//! (KIP-219: the client is told how long it was held back, and backs off
//! without an error). Produce responses are small: decoded and encoded
//! again. Fetch responses stream: their `throttle_time_ms` is the first
//! field after the header, a fixed-width int32 patched in place
//! ([`fetch_throttle_at`]).

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ProduceResponse, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Message};

use super::codec::{Framer, decode};
use super::frame::RequestHeader;
use super::rewrite::RewriteError;
use super::wire;

/// The Produce response `frame` (length prefix included) to `request`
/// with `throttle_time_ms` at least `ms` (a broker's own throttle time, if
/// longer, is kept). Versions the codec does not decode (0-2, which
/// ApiVersions never offers through the proxy; version 0 has no such
/// field) are returned as they came.
pub fn produce_throttled(
    frame: &Bytes,
    request: &RequestHeader,
    ms: i32,
) -> Result<Bytes, RewriteError> {
    let version = request.api_version;
    let fail = |reason: String| RewriteError {
        api: "Produce".to_owned(),
        version,
        reason,
    };
    if request.api_key != ApiKey::Produce as i16 {
        return Err(fail("not a Produce response".to_owned()));
    }
    if version < <ProduceResponse as Message>::VERSIONS.min {
        return Ok(frame.clone());
    }
    let header_version = ApiKey::Produce.response_header_version(version);
    let mut buf = frame.slice(4..);
    wire::check(&wire::RESPONSE_HEADER, header_version, &buf).map_err(|e| fail(e.to_string()))?;
    let header =
        ResponseHeader::decode(&mut buf, header_version).map_err(|e| fail(e.to_string()))?;
    let mut response = decode::<ProduceResponse>(&mut buf, version).map_err(fail)?;
    response.throttle_time_ms = response.throttle_time_ms.max(ms);
    let out = Framer {
        header: &header,
        header_version,
    };
    out.frame(&response, version, &buf).map_err(fail)
}

/// Where a Fetch response's `throttle_time_ms` is in its frame (length
/// prefix included), read from the frame's first bytes `head`: `None`
/// before v1 (no such field), or when `head` ends before the field's end
/// is known (read more), or the header's tagged fields are malformed.
pub fn fetch_throttle_at(head: &[u8], version: i16) -> Option<usize> {
    if version < 1 {
        return None;
    }
    // Size, correlation id; from v12 the header's tagged fields.
    let mut at = 8;
    if ApiKey::Fetch.response_header_version(version) >= 1 {
        let (count, n) = varint(head.get(at..)?)?;
        at += n;
        for _ in 0..count {
            let (_tag, n) = varint(head.get(at..)?)?;
            at += n;
            let (size, n) = varint(head.get(at..)?)?;
            at += n + usize::try_from(size).ok()?;
        }
    }
    (head.len() >= at + 4).then_some(at)
}

/// The Fetch response `frame` (length prefix included) to a request of
/// `version` with `throttle_time_ms` at least `ms`, patched in place (a
/// broker's own longer time is kept); as it came before v1 (no such field)
/// or when its header cannot be read.
pub fn fetch_throttled(frame: &Bytes, version: i16, ms: i32) -> Bytes {
    let Some(at) = fetch_throttle_at(frame, version) else {
        return frame.clone();
    };
    let mut out = frame.to_vec();
    let field = &mut out[at..at + 4];
    let old = i32::from_be_bytes([field[0], field[1], field[2], field[3]]);
    field.copy_from_slice(&old.max(ms).to_be_bytes());
    Bytes::from(out)
}

/// An unsigned varint and its length in bytes.
fn varint(buf: &[u8]) -> Option<(u32, usize)> {
    let mut value: u32 = 0;
    for (i, b) in buf.iter().take(5).enumerate() {
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::produce_response::{
        PartitionProduceResponse, TopicProduceResponse,
    };
    use kafka_protocol::protocol::StrBytes;

    use super::*;
    use crate::encode;

    fn produce_response(version: i16, throttle_ms: i32) -> Bytes {
        let response = ProduceResponse::default()
            .with_responses(vec![
                TopicProduceResponse::default()
                    .with_name(StrBytes::from_static_str("orders").into())
                    .with_partition_responses(vec![
                        PartitionProduceResponse::default()
                            .with_index(0)
                            .with_base_offset(42),
                    ]),
            ])
            .with_throttle_time_ms(throttle_ms);
        encode::response(ApiKey::Produce, version, 7, &response).unwrap()
    }

    fn header(version: i16) -> RequestHeader {
        RequestHeader {
            api_key: ApiKey::Produce as i16,
            api_version: version,
            correlation_id: 7,
        }
    }

    fn throttle_of(frame: &Bytes, version: i16) -> i32 {
        let header_version = ApiKey::Produce.response_header_version(version);
        let mut buf = frame.slice(4..);
        ResponseHeader::decode(&mut buf, header_version).unwrap();
        decode::<ProduceResponse>(&mut buf, version)
            .unwrap()
            .throttle_time_ms
    }

    #[test]
    fn the_longer_throttle_time_is_set_at_every_version_that_has_one() {
        // (version, broker's throttle ms, proxy's, expected)
        let table = [
            (3, 0, 250, 250),
            (5, 0, 1, 1),
            (8, 900, 250, 900),
            (9, 0, 5_000, 5_000),
            (11, 10, 20, 20),
        ];
        for (version, broker, proxy, expected) in table {
            let frame = produce_response(version, broker);
            let out = produce_throttled(&frame, &header(version), proxy).unwrap();
            assert_eq!(throttle_of(&out, version), expected, "v{version}");
            // Only the throttle time differs.
            let same = produce_throttled(&out, &header(version), 0).unwrap();
            assert_eq!(same, out, "v{version}");
            assert_eq!(out.len(), frame.len(), "v{version}");
        }
    }

    #[test]
    fn versions_the_codec_cannot_decode_pass_as_they_came() {
        let frame = Bytes::from_static(&[0, 0, 0, 6, 0, 0, 0, 7, 0, 1]);
        assert_eq!(produce_throttled(&frame, &header(2), 100).unwrap(), frame);
    }

    #[test]
    fn a_response_that_does_not_decode_is_an_error() {
        let frame = Bytes::from_static(&[0, 0, 0, 6, 0, 0, 0, 7, 0, 1]);
        assert!(produce_throttled(&frame, &header(5), 100).is_err());
    }
}

#[cfg(test)]
mod fetch_tests {
    use kafka_protocol::messages::{FetchResponse, ResponseHeader};
    use kafka_protocol::protocol::Encodable;

    use super::*;

    #[test]
    fn the_fetch_throttle_time_is_found_at_every_version() {
        assert_eq!(fetch_throttle_at(&[0; 16], 0), None, "v0 has none");
        let versions = <FetchResponse as Message>::VERSIONS;
        for version in versions.min.max(1)..=versions.max {
            let response = FetchResponse::default().with_throttle_time_ms(0x0102_0304);
            let frame = crate::encode::response(ApiKey::Fetch, version, 7, &response).unwrap();
            let at = fetch_throttle_at(&frame, version).unwrap();
            assert_eq!(frame[at..at + 4], [1, 2, 3, 4], "v{version}");
            assert_eq!(fetch_throttle_at(&frame[..at + 3], version), None);
        }
        // A flexible header with a tagged field (unknown to the client).
        let mut header = ResponseHeader::default();
        header.correlation_id = 7;
        header
            .unknown_tagged_fields
            .insert(9, bytes::Bytes::from_static(b"xyz"));
        let mut frame = bytes::BytesMut::new();
        frame.extend_from_slice(&[0; 4]);
        header.encode(&mut frame, 1).unwrap();
        FetchResponse::default()
            .with_throttle_time_ms(0x0a0b_0c0d)
            .encode(&mut frame, 16)
            .unwrap();
        let at = fetch_throttle_at(&frame, 16).unwrap();
        assert_eq!(frame[at..at + 4], [10, 11, 12, 13]);
    }

    #[test]
    fn a_fetch_answer_keeps_the_longer_throttle_time() {
        for (broker, proxy, expected) in [(0, 250, 250_i32), (900, 250, 900)] {
            let response = FetchResponse::default().with_throttle_time_ms(broker);
            let frame = crate::encode::response(ApiKey::Fetch, 12, 7, &response).unwrap();
            let out = fetch_throttled(&frame, 12, proxy);
            let at = fetch_throttle_at(&out, 12).unwrap();
            assert_eq!(out[at..at + 4], expected.to_be_bytes());
            assert_eq!((out.len(), &out[..at]), (frame.len(), &frame[..at]));
        }
        let v0 = Bytes::from_static(&[0, 0, 0, 6, 0, 0, 0, 7, 0, 0]);
        assert_eq!(fetch_throttled(&v0, 0, 100), v0);
    }
}
