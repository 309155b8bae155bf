use bytes::Bytes;
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{FetchResponse, ResponseHeader, TopicName};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use uuid::Uuid;

use super::*;
use crate::encode;

/// What a client named: topic names before v13, ids from v13.
fn entry(version: i16, name: &str, id: u128, code: i16, records: bool) -> FetchableTopicResponse {
    let mut t = FetchableTopicResponse::default();
    if version < 13 {
        t.topic = TopicName(StrBytes::from_string(name.to_owned()));
    } else {
        t.topic_id = Uuid::from_u128(id);
    }
    let mut p = PartitionData::default();
    p.error_code = code;
    p.high_watermark = if records { 10 } else { -1 };
    p.records = records.then(|| Bytes::from_static(b"some records"));
    t.partitions = vec![p];
    t
}

fn upstream(version: i16, topics: usize) -> Bytes {
    let mut r = FetchResponse::default();
    r.throttle_time_ms = 7;
    if version >= 7 {
        r.session_id = 3;
    }
    r.responses = (0..topics)
        .map(|i| entry(version, &format!("ok-{i}"), i as u128 + 10, 0, true))
        .collect();
    encode::response(ApiKey::Fetch, version, 1, &r).unwrap()
}

fn decoded(frame: &[u8], version: i16) -> FetchResponse {
    let size = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
    assert_eq!(
        size as usize,
        frame.len() - 4,
        "the size prefix is the frame's"
    );
    let mut buf = Bytes::copy_from_slice(&frame[4..]);
    ResponseHeader::decode(&mut buf, ApiKey::Fetch.response_header_version(version)).unwrap();
    let r = FetchResponse::decode(&mut buf, version).unwrap();
    assert!(buf.is_empty(), "v{version}: nothing left over");
    r
}

/// The frame as it streams: the head up to the count (size grown), the
/// count and entries, the rest.
fn streamed(p: &Prepended, frame: &[u8]) -> Vec<u8> {
    let found = p.find(frame).unwrap().unwrap();
    let put = p.bytes(&found).unwrap();
    let size = frame.len() - 4 - found.len + put.len();
    let mut out = (size as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&frame[4..found.at]);
    out.extend_from_slice(&put);
    out.extend_from_slice(&frame[found.at + found.len..]);
    out
}

#[test]
fn the_refused_go_first_at_every_version_as_the_client_named_them() {
    for version in 4..=18 {
        let refused = [entry(version, "no-b", 2, 29, false)];
        let p = Prepended::encode(&refused, version).unwrap();
        let frame = upstream(version, 1);
        let out = p.insert(&frame).unwrap();
        assert_eq!(streamed(&p, &frame), out, "v{version}: streamed as held");
        let r = decoded(&out, version);
        assert_eq!(r.throttle_time_ms, 7, "v{version}");
        let expected = [refused[0].clone(), entry(version, "ok-0", 10, 0, true)];
        assert_eq!(r.responses, expected, "v{version}");
        // Found only once the head holds the whole count.
        let found = p.find(&frame).unwrap().unwrap();
        assert_eq!(found.count, 1);
        for cut in 0..found.at + found.len {
            assert_eq!(
                p.find(&frame[..cut]).unwrap(),
                None,
                "v{version} cut at {cut}"
            );
        }
    }
}

#[test]
fn a_count_that_needs_another_byte_grows_the_frame_by_it() {
    // A compact array's count is N + 1: 126 topics take one byte, 127 two.
    for version in [12, 16, 18] {
        let refused = [entry(version, "no-b", 2, 29, false)];
        let p = Prepended::encode(&refused, version).unwrap();
        let frame = upstream(version, 126);
        let found = p.find(&frame).unwrap().unwrap();
        assert_eq!((found.count, found.len), (126, 1));
        let put = p.bytes(&found).unwrap();
        assert_eq!(put.len(), 2 + p.entries.len(), "v{version}");
        let out = p.insert(&frame).unwrap();
        assert_eq!(out.len(), frame.len() + 1 + p.entries.len());
        let r = decoded(&out, version);
        assert_eq!(r.responses.len(), 127);
        assert_eq!(r.responses[0], refused[0]);
    }
    // Before v12 the count is an int32, whatever it holds.
    let refused = [
        entry(11, "no-b", 0, 29, false),
        entry(11, "no-c", 0, 29, false),
    ];
    let p = Prepended::encode(&refused, 11).unwrap();
    let frame = upstream(11, 200);
    let out = p.insert(&frame).unwrap();
    assert_eq!(out.len(), frame.len() + p.entries.len());
    assert_eq!(decoded(&out, 11).responses.len(), 202);
}

#[test]
fn the_headers_tagged_fields_are_walked_over() {
    let version = 16;
    let mut header = ResponseHeader::default();
    header.correlation_id = 1;
    header
        .unknown_tagged_fields
        .insert(9, Bytes::from_static(b"xyz"));
    let mut frame = BytesMut::new();
    frame.put_i32(0);
    header.encode(&mut frame, 1).unwrap();
    let mut body = FetchResponse::default();
    body.responses = vec![entry(version, "", 10, 0, true)];
    body.encode(&mut frame, version).unwrap();
    let size = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    let p = Prepended::encode(&[entry(version, "", 2, 29, false)], version).unwrap();
    let out = p.insert(&frame).unwrap();
    assert_eq!(decoded(&out, version).responses.len(), 2);
}

#[test]
fn a_null_topics_array_is_an_error() {
    let p = Prepended::encode(&[entry(16, "", 2, 29, false)], 16).unwrap();
    // Size, correlation id, no tags, throttle, error, session, null array.
    let mut frame = vec![0, 0, 0, 16, 0, 0, 0, 1, 0];
    frame.extend([0; 10]);
    frame.push(0);
    assert!(p.find(&frame).is_err());
    let p = Prepended::encode(&[entry(11, "no-b", 0, 29, false)], 11).unwrap();
    let mut frame = vec![0, 0, 0, 18, 0, 0, 0, 1];
    frame.extend([0; 10]);
    frame.extend((-1i32).to_be_bytes());
    assert!(p.find(&frame).is_err());
}
