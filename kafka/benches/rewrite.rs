//! Rewriting the endpoints of a Fetch response (KIP-951, the newest
//! version), as a ratio to what the proxy did before in the same run:
//! kafka-protocol decoding the whole response and encoding it again into a
//! frame sized in advance. The proxy now rewrites only the tagged fields at
//! the end and shares the records with the frame it read.
//!
//! Run: `cargo bench -p sluice-proxy --bench rewrite` (or `scripts/bench`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchResponse, ResponseHeader, fetch_response};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use sluice_config::model::BrokerPorts;
use sluice_config::types::Port;
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::rewrite::{Advertised, rewrite_response};

const RUNS: usize = 41;

fn response(records: usize) -> FetchResponse {
    let mut r = FetchResponse::default();
    // Partitions of 1 MiB at most, as a broker fills them.
    r.responses = vec![
        fetch_response::FetchableTopicResponse::default().with_partitions(
            (0..records.div_ceil(1 << 20))
                .map(|p| {
                    fetch_response::PartitionData::default()
                        .with_partition_index(p as i32)
                        .with_records(Some(Bytes::from(vec![7u8; records.min(1 << 20)])))
                })
                .collect(),
        ),
    ];
    let mut e = fetch_response::NodeEndpoint::default();
    e.node_id = BrokerId(1);
    e.host = StrBytes::from_static_str("kafka-1.upstream.internal");
    e.port = 9092;
    r.node_endpoints = vec![e];
    r
}

fn frame(version: i16, body: &FetchResponse) -> Bytes {
    sluice_kafka::encode::response(ApiKey::Fetch, version, 7, body).expect("frame")
}

/// What the proxy did before: decode it all, rewrite, encode it all.
fn decode_and_encode(input: &Bytes, version: i16) -> Bytes {
    let header_version = ApiKey::Fetch.response_header_version(version);
    let mut buf = input.slice(4..);
    let header = ResponseHeader::decode(&mut buf, header_version).expect("header");
    let mut r = FetchResponse::decode(&mut buf, version).expect("body");
    for e in &mut r.node_endpoints {
        e.host = StrBytes::from_static_str("proxy.example");
        e.port = 19093;
    }
    let size =
        header.compute_size(header_version).expect("size") + r.compute_size(version).expect("size");
    let mut out = BytesMut::with_capacity(4 + size);
    out.put_i32(size as i32);
    header.encode(&mut out, header_version).expect("header");
    r.encode(&mut out, version).expect("body");
    out.freeze()
}

fn time(mut f: impl FnMut()) -> (Duration, Duration, Duration) {
    f();
    let mut v: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    v.sort();
    (v[RUNS / 2], v[RUNS / 10], v[RUNS * 9 / 10])
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let version = ApiKey::Fetch.valid_versions().max;
    let to = Advertised::new(
        "proxy.example",
        BrokerPorts {
            start: Port::new(19093).expect("port"),
            count: 1,
            first_node_id: 1,
        },
    );
    let request = RequestHeader {
        api_key: ApiKey::Fetch as i16,
        api_version: version,
        correlation_id: 7,
    };
    for (name, records) in [("16 KiB", 16 << 10), ("1 MiB", 1 << 20), ("8 MiB", 8 << 20)] {
        let input = frame(version, &response(records));
        let new = time(|| {
            let out = rewrite_response(&input, &request, &to).expect("rewritten");
            black_box(out.frame.parts().len());
        });
        let old = time(|| {
            black_box(decode_and_encode(&input, version).len());
        });
        let case = format!("rewrite a Fetch v{version} response with endpoints, {name} of records");
        let ratio = new.0.as_secs_f64() / old.0.as_secs_f64();
        println!(
            "{case:<64} {:>9.1} µs [{:.1} – {:.1}]  {ratio:>5.3}x decode + encode ({:.1} µs)",
            us(new.0),
            us(new.1),
            us(new.2),
            us(old.0)
        );
        let record = serde_json::json!({
            "section": "response rewriting (in process)", "case": case, "unit": "µs",
            "median": us(new.0), "lo": us(new.1), "hi": us(new.2), "spread": "p10-p90", "n": RUNS,
            "baseline": "decode + encode by kafka-protocol (before)", "baseline_median": us(old.0),
            "ratio": ratio,
        });
        println!("BENCH {record}");
    }
}
