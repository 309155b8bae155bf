//! Fetch responses (v16+) rewritten while they stream: walked a part at a
//! time from pieces as they would arrive, the records passed without being
//! held, the tail rewritten into the size announced first. What reaches the
//! client is decoded by kafka-protocol and compared with the response
//! expected: endpoints advertised, every other field as it came, and one
//! padding field more.

use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, PartitionData,
};
use kafka_protocol::protocol::Decodable;
use sluice_config::types::HostPattern;
use sluice_kafka::rewrite::{MAX_TRAILING_BYTES, PADDING_TAG, RewrittenTail, rewrite_tail};
use sluice_kafka::streamed::{HELD_UP_TO, Part, Walk, streams};

use super::*;

/// A response as a broker sends one after a leader moved: two topics, one
/// partition moved (no records, its new leader named), others with records
/// (none, null, some), aborted transactions, tags the crate does not know
/// at every level.
fn moved(records: usize, nodes: &[(i32, &str, i32)]) -> FetchResponse {
    let data = |index: i32, records: Option<usize>| {
        let mut p = PartitionData::default()
            .with_partition_index(index)
            .with_high_watermark(1_000)
            .with_records(records.map(|n| Bytes::from(vec![index as u8; n])));
        p.unknown_tagged_fields
            .insert(5, Bytes::from_static(b"five"));
        p
    };
    let mut gone = data(2, Some(0)).with_error_code(6).with_current_leader(
        LeaderIdAndEpoch::default()
            .with_leader_id(BrokerId(2))
            .with_leader_epoch(4),
    );
    gone.diverging_epoch = EpochEndOffset::default().with_epoch(3).with_end_offset(77);
    let aborted = (0..3)
        .map(|i| {
            AbortedTransaction::default()
                .with_producer_id(kafka_protocol::messages::ProducerId(i))
                .with_first_offset(i * 10)
        })
        .collect();
    let mut first = FetchableTopicResponse::default().with_partitions(vec![
        data(0, Some(records)).with_aborted_transactions(Some(aborted)),
        data(1, None),
        gone,
    ]);
    first
        .unknown_tagged_fields
        .insert(8, Bytes::from_static(b"eight"));
    let second = FetchableTopicResponse::default()
        .with_partitions(vec![data(0, Some(records / 3)), data(1, Some(1))]);
    let mut r = FetchResponse::default().with_responses(vec![first, second]);
    r.node_endpoints = endpoints!(fetch_response::NodeEndpoint, nodes);
    for (tag, value) in [
        (3, &b"three"[..]),
        (9, b"nine"),
        (20_000, b"above the padding"),
    ] {
        r.unknown_tagged_fields
            .insert(tag, Bytes::from_static(value));
    }
    r
}

/// What the data plane does with a streamed response, in memory: pieces of
/// `feed` bytes arrive; checked parts and records pass as they are; the
/// tail is rewritten into the reserve; the size announced first is the
/// original's plus the reserve.
fn stream_through(
    input: &Bytes,
    version: i16,
    to: &Advertised,
    feed: usize,
) -> Result<(Vec<u8>, RewrittenTail), String> {
    let reserve = to.tail_reserve();
    let mut out = Vec::with_capacity(input.len() + reserve);
    out.extend_from_slice(&(input.len() as i32 - 4 + reserve as i32).to_be_bytes());
    let mut walk = Walk::fetch(version);
    let (mut at, mut have) = (0, feed.min(input.len()));
    loop {
        match walk.next(&input[at..have]).map_err(|e| e.to_string())? {
            Some(Part::Checked(n)) => {
                let from = at.max(4);
                out.extend_from_slice(&input[from..at + n]);
                at += n;
            }
            Some(Part::Records(n)) if at + n > input.len() => {
                return Err(format!("records of {n} bytes"));
            }
            Some(Part::Records(n)) => {
                out.extend_from_slice(&input[at..at + n]);
                at += n;
                have = have.max(at);
            }
            Some(Part::Tail) => break,
            None if have == input.len() => return Err("the response ends in a part".into()),
            None => have = (have + feed).min(input.len()),
        }
    }
    let tail = rewrite_tail(&input.slice(at..), version, to, reserve).map_err(|e| e.to_string())?;
    out.extend_from_slice(&tail.bytes);
    assert_eq!(out.len(), input.len() + reserve, "the size announced first");
    Ok((out, tail))
}

/// The response a client decodes from `frame`, and its padding removed
/// (checked to be zeros).
fn decoded(frame: &[u8], version: i16) -> FetchResponse {
    let mut buf = Bytes::copy_from_slice(&frame[4..]);
    let header_version = ApiKey::Fetch.response_header_version(version);
    kafka_protocol::messages::ResponseHeader::decode(&mut buf, header_version).unwrap();
    let mut r = FetchResponse::decode(&mut buf, version).unwrap();
    assert!(buf.is_empty(), "{} bytes after the response", buf.len());
    let padding = r
        .unknown_tagged_fields
        .remove(&(PADDING_TAG as i32))
        .expect("the padding field");
    assert!(padding.iter().all(|&b| b == 0));
    r
}

/// Compares two responses, printing only what differs (records are large).
fn same(got: &FetchResponse, want: &FetchResponse, what: &str) {
    assert_eq!(got.node_endpoints, want.node_endpoints, "{what}: endpoints");
    assert_eq!(
        got.unknown_tagged_fields, want.unknown_tagged_fields,
        "{what}: tags"
    );
    assert_eq!(got.responses.len(), want.responses.len(), "{what}: topics");
    for (g, w) in got.responses.iter().zip(&want.responses) {
        assert_eq!(
            g.unknown_tagged_fields, w.unknown_tagged_fields,
            "{what}: topic tags"
        );
        for (g, w) in g.partitions.iter().zip(&w.partitions) {
            let strip = |p: &PartitionData| p.clone().with_records(None);
            assert_eq!(strip(g), strip(w), "{what}: partition");
            assert!(g.records == w.records, "{what}: records");
        }
    }
    assert!(got == want, "{what}");
}

fn sni() -> Advertised {
    let pattern: HostPattern = "broker-$(nodeId).proxy.example".parse().unwrap();
    Advertised::sni(pattern, 9443)
}

#[test]
fn the_endpoints_of_a_streamed_fetch_response_are_the_proxys() {
    // Port per broker: node 7 has no port and is dropped. SNI: every node
    // has a name.
    let ports: &[(i32, &str, i32)] = &[(1, "proxy.example", 19093), (2, "proxy.example", 19094)];
    let names: &[(i32, &str, i32)] = &[
        (1, "broker-1.proxy.example", 9443),
        (2, "broker-2.proxy.example", 9443),
        (7, "broker-7.proxy.example", 9443),
    ];
    let advertised_as = [(advertised(), ports, vec![7]), (sni(), names, vec![])];
    for v in 16..=ApiKey::Fetch.valid_versions().max {
        for (to, endpoints, unmapped) in &advertised_as {
            let input = frame(ApiKey::Fetch, v, &moved(200_000, &UPSTREAM));
            assert!(streams(ApiKey::Fetch as i16, v, input.len()));
            for feed in [1, 7, 4096, input.len()] {
                let (out, tail) = stream_through(&input, v, to, feed).unwrap();
                same(
                    &decoded(&out, v),
                    &moved(200_000, endpoints),
                    &format!("v{v}, pieces of {feed}"),
                );
                assert_eq!(tail.learned, learned_all());
                assert_eq!(&tail.unmapped, unmapped);
                assert!(tail.crowded.is_empty() && tail.changed);
                assert_no_upstream(&out, "a streamed Fetch response");
            }
        }
    }
}

#[test]
fn a_streamed_response_without_endpoints_is_only_padded() {
    let v = ApiKey::Fetch.valid_versions().max;
    let input = frame(ApiKey::Fetch, v, &moved(100_000, &[]));
    let (out, tail) = stream_through(&input, v, &advertised(), 999).unwrap();
    assert!(!tail.changed);
    same(&decoded(&out, v), &moved(100_000, &[]), "no endpoints");
    // Everything before the tail is the upstream's, byte for byte.
    let tail_len = {
        let mut walk = Walk::fetch(v);
        let mut at = 0;
        while let Some(part) = walk.next(&input[at..]).unwrap() {
            match part {
                Part::Checked(n) | Part::Records(n) => at += n,
                Part::Tail => break,
            }
        }
        input.len() - at
    };
    let head = input.len() - tail_len;
    assert_eq!(out[4..head], input[4..head]);
}

#[test]
fn endpoints_beyond_the_reserve_are_left_out_never_passed_unrewritten() {
    // Nodes 1 and 2 served under long names, announced under short ones:
    // with many of them, some cannot fit in the reserve.
    let pattern: HostPattern = "a-rather-long-broker-name-$(nodeId).proxy.example"
        .parse()
        .unwrap();
    let to = Advertised::sni(pattern, 9443);
    let nodes: Vec<(i32, String, i32)> = (1..=12).map(|i| (i, format!("k{i}"), 9092)).collect();
    let nodes: Vec<(i32, &str, i32)> = nodes.iter().map(|(i, h, p)| (*i, h.as_str(), *p)).collect();
    let v = 16;
    let input = frame(ApiKey::Fetch, v, &moved(100_000, &nodes));
    let (out, tail) = stream_through(&input, v, &to, 65_536).unwrap();
    assert!(
        !tail.crowded.is_empty(),
        "the reserve holds only a few long names"
    );
    let got = decoded(&out, v);
    let kept: Vec<i32> = got.node_endpoints.iter().map(|e| e.node_id.0).collect();
    assert_eq!(kept.len() + tail.crowded.len(), 12);
    for e in &got.node_endpoints {
        assert_eq!(
            e.host.as_str(),
            format!("a-rather-long-broker-name-{}.proxy.example", e.node_id.0)
        );
        assert_eq!(e.port, 9443);
    }
    assert!(
        !out.windows(3).any(|w| w == b"\x03k1"),
        "an upstream host reached the client"
    );
}

#[test]
fn only_fetch_v16_and_later_larger_than_a_buffer_streams() {
    let fetch = ApiKey::Fetch as i16;
    assert!(!streams(fetch, 15, 10 << 20));
    assert!(!streams(fetch, 16, HELD_UP_TO));
    assert!(streams(fetch, 16, HELD_UP_TO + 1));
    assert!(!streams(
        fetch,
        ApiKey::Fetch.valid_versions().max + 1,
        10 << 20
    ));
    assert!(!streams(ApiKey::Produce as i16, 11, 10 << 20));
}

#[test]
fn a_response_cut_short_anywhere_is_refused_without_a_panic() {
    let v = 16;
    let input = frame(ApiKey::Fetch, v, &moved(1_000, &UPSTREAM));
    for cut in 8..input.len() {
        let mut short = BytesMut::from(&input[..cut]);
        short[..4].copy_from_slice(&(cut as i32 - 4).to_be_bytes());
        let short = short.freeze();
        assert!(
            stream_through(&short, v, &advertised(), 64).is_err(),
            "cut at {cut} of {}",
            input.len()
        );
    }
}

#[test]
fn malformed_responses_are_refused_with_a_reason() {
    let v = 16;
    let to = advertised();
    let refused = |frame: &Bytes| stream_through(frame, v, &to, 4096).unwrap_err();
    let tail_at = |frame: &Bytes| {
        let mut walk = Walk::fetch(v);
        let mut at = 0;
        while let Some(Part::Checked(n) | Part::Records(n)) = walk.next(&frame[at..]).unwrap() {
            at += n;
        }
        at
    };
    let input = frame(ApiKey::Fetch, v, &moved(1_000, &UPSTREAM));
    let with_tail = |tail: &[u8]| {
        let at = tail_at(&input);
        let mut f = BytesMut::from(&input[..at]);
        f.put_slice(tail);
        let size = (f.len() - 4) as i32;
        f[..4].copy_from_slice(&size.to_be_bytes());
        f.freeze()
    };
    // Bytes after the tagged fields: as many as a held response may have
    // pass on after them; more are refused.
    let mut extra = input[tail_at(&input)..].to_vec();
    extra.extend([0; MAX_TRAILING_BYTES]);
    let (out, _) = stream_through(&with_tail(&extra), v, &to, 4096).unwrap();
    assert_eq!(
        out[out.len() - MAX_TRAILING_BYTES..],
        [0; MAX_TRAILING_BYTES]
    );
    extra.push(0);
    assert!(refused(&with_tail(&extra)).contains("after the response's tagged fields"));
    // A padding field whose size runs past the end.
    let mut padded = BytesMut::new();
    padded.put_u8(1);
    padded.put_slice(&[0xff, 0x7f, 0x09]);
    assert!(refused(&with_tail(&padded)).contains("cannot rewrite Fetch v16"));
    // Endpoints that run past the end.
    assert!(refused(&with_tail(&[1, 0, 20, 3, 0, 0])).contains("cannot rewrite Fetch v16"));
    // A null topics array.
    let mut null_topics = BytesMut::from(&input[..]);
    let at = 4 + 4 + 1 + 10;
    null_topics[at] = 0;
    assert!(refused(&null_topics.freeze()).contains("null array"));
}

#[test]
fn a_partition_tag_whose_size_lies_is_refused() {
    let v = 16;
    let mut r = FetchResponse::default().with_responses(vec![
        FetchableTopicResponse::default()
            .with_partitions(vec![PartitionData::default().with_current_leader(
                LeaderIdAndEpoch::default().with_leader_id(BrokerId(2)),
            )]),
    ]);
    r.throttle_time_ms = 0;
    let input = frame(ApiKey::Fetch, v, &r);
    // current_leader (tag 1) is 9 bytes: leader, epoch, no tags. Say 8.
    let at = input
        .windows(3)
        .position(|w| w == [1, 1, 9])
        .expect("the partition's one tag")
        + 2;
    let mut lying = BytesMut::from(&input[..]);
    lying[at] = 8;
    let err = stream_through(&lying.freeze(), v, &advertised(), 64).unwrap_err();
    assert!(err.contains("PartitionData"), "{err}");
}

#[test]
fn produce_endpoints_are_the_proxys_with_sni_routing() {
    let endpoints = |nodes: &[(i32, &str, i32)]| endpoints!(produce_response::NodeEndpoint, nodes);
    for v in 10..=ApiKey::Produce.valid_versions().max {
        let mut r = ProduceResponse::default();
        r.node_endpoints = endpoints(&UPSTREAM);
        let input = frame(ApiKey::Produce, v, &r);
        let out = rewrite_response(&input, &req(ApiKey::Produce, v), &sni()).unwrap();
        r.node_endpoints = endpoints(&[
            (1, "broker-1.proxy.example", 9443),
            (2, "broker-2.proxy.example", 9443),
            (7, "broker-7.proxy.example", 9443),
        ]);
        assert_eq!(
            out.frame.to_bytes(),
            frame(ApiKey::Produce, v, &r),
            "Produce v{v}"
        );
        assert_no_upstream(&out.frame.to_bytes(), "Produce");
    }
}

/// Sluice in front of Sluice: the response the first proxy padded streams
/// through the second, whose rewrite drops that padding and fills the room
/// with its own (a refused padding closed every consumer connection).
#[test]
fn a_response_through_two_proxies_streams_again() {
    let v = 16;
    let input = frame(ApiKey::Fetch, v, &moved(100_000, &UPSTREAM));
    let to = advertised();
    let (once, _) = stream_through(&input, v, &to, 4096).unwrap();
    let once = Bytes::from(once);
    let (twice, tail) = stream_through(&once, v, &to, 4096).unwrap();
    assert!(tail.changed);
    same(
        &decoded(&twice, v),
        &decoded(&once, v),
        "through two proxies",
    );
}
