//! The quota is a limit, not a request (issue 46): clients that ignore
//! `throttle_time_ms` are held to their quota by the proxy, against a real
//! tansu, all three at once on one proxy:
//!
//! 1. a client opening a new connection for every Produce (two threads of
//!    it) against a cluster quota: reconnecting buys nothing;
//! 2. one connection sending frames of six seconds of its quota each: no
//!    throttle cap lets a frame through early;
//! 3. sixteen client ids at once, each against its per-client quota, half
//!    of them on a new connection for every Produce, half on one;
//! 4. a consumer opening a new connection for every Fetch against a fetch
//!    quota (its rate: the Fetch responses' frames it read, as the quota
//!    counts them).
//!
//! The measure: each client notes when each Produce of its was acknowledged
//! by the broker (error code 0: the broker accepted the bytes) and the
//! frame's size (what the quota counts). Its rate is the bytes of the
//! requests acknowledged after the first acknowledgement past the warm-up
//! ([`WARM_UP`], so the initial burst tolerance of about one second of
//! quota does not dominate), up to the last one within the run, over the
//! time between those two acknowledgements (at least 10 s). A client that
//! honours nothing sends its next request as soon as it has the answer to
//! the last one.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, FetchResponse, ProduceRequest, ProduceResponse, ResponseHeader,
    TopicName, fetch_request,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config::{tansu_cluster, with_drain};
use sluice_tests::peers::Tansu;

/// The cluster quota of `flood` (case 1).
const CLUSTER_QUOTA: f64 = 256.0 * 1024.0;
/// The fetch quota of `drink` (case 4).
const FETCH_QUOTA: f64 = 256.0 * 1024.0;
/// The per-client quota of `fair` (cases 2 and 3).
const CLIENT_QUOTA: f64 = 64.0 * 1024.0;
/// Ignored by the clients: measured from the first acknowledgement after it.
const WARM_UP: Duration = Duration::from_secs(3);
/// How long the clients of cases 1 and 3 send.
const RUN: Duration = Duration::from_secs(14);
/// Case 3's client ids.
const FAIR_CLIENTS: usize = 16;

/// When each acknowledged request was acknowledged, and its frame's size.
type Acks = Vec<(Instant, usize)>;

/// A Produce v9 frame from `client_id` of one record of `value` bytes to
/// partition 0 of `topic`, acks=1.
fn produce_frame(client_id: &'static str, topic: &'static str, value: usize, id: i32) -> Bytes {
    let record = Record {
        transactional: false,
        control: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 0,
        key: None,
        value: Some(Bytes::from(vec![b'q'; value])),
        headers: Default::default(),
        delete_horizon: false,
    };
    let mut batch = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut batch, &[record], &options).expect("encode records");
    let mut partition = PartitionProduceData::default();
    partition.records = Some(batch.freeze());
    let mut data = TopicProduceData::default();
    data.name = TopicName(StrBytes::from_static_str(topic));
    data.partition_data = vec![partition];
    let mut request = ProduceRequest::default();
    request.acks = 1;
    request.timeout_ms = 30_000;
    request.topic_data = vec![data];
    sluice_kafka::encode::request(ApiKey::Produce, 9, id, client_id, &request).expect("encode")
}

/// Sends `frame` on `stream` and reads its answer: whether the broker
/// accepted it.
fn produce(stream: &mut TcpStream, frame: &[u8]) -> bool {
    stream.write_all(frame).expect("send a Produce");
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).expect("read an answer's size");
    let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).expect("read an answer");
    let mut body = Bytes::from(body);
    let version = ApiKey::Produce.response_header_version(9);
    ResponseHeader::decode(&mut body, version).expect("a response header");
    let r = ProduceResponse::decode(&mut body, 9).expect("a Produce response");
    r.responses[0].partition_responses[0].error_code == 0
}

fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
}

/// Produces `value`-byte records as `client_id` until `until` or `frames`
/// requests, each on a new connection when `reconnect`.
fn client(
    addr: String,
    client_id: &'static str,
    value: usize,
    reconnect: bool,
    until: Instant,
    frames: usize,
) -> Acks {
    let mut acks = Acks::new();
    let mut stream = connect(&addr);
    for id in 1..=frames {
        if Instant::now() >= until {
            break;
        }
        if reconnect && id > 1 {
            stream = connect(&addr);
        }
        let frame = produce_frame(client_id, "quota", value, id as i32);
        assert!(
            produce(&mut stream, &frame),
            "{client_id}: a Produce failed"
        );
        acks.push((Instant::now(), frame.len()));
    }
    acks
}

/// A Fetch v12 of `topic`'s partition 0 from offset 0, up to 64 KiB.
fn fetch_frame(topic: &'static str, id: i32) -> Bytes {
    let mut partition = fetch_request::FetchPartition::default();
    partition.partition_max_bytes = 64 * 1024;
    let mut t = fetch_request::FetchTopic::default();
    t.topic = TopicName(StrBytes::from_static_str(topic));
    t.partitions = vec![partition];
    let mut request = FetchRequest::default();
    request.max_wait_ms = 100;
    request.max_bytes = 64 * 1024;
    request.session_epoch = -1;
    request.topics = vec![t];
    sluice_kafka::encode::request(ApiKey::Fetch, 12, id, "drinker", &request).expect("encode")
}

/// Fetches from `addr` on a new connection each time until `until`: when
/// each response was read, and its frame's size.
fn fetcher(addr: String, until: Instant) -> Acks {
    let mut acks = Acks::new();
    for id in 1.. {
        if Instant::now() >= until {
            break;
        }
        let mut stream = connect(&addr);
        stream
            .write_all(&fetch_frame("fetched", id))
            .expect("send a Fetch");
        let mut len = [0u8; 4];
        stream.read_exact(&mut len).expect("read an answer's size");
        let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
        stream.read_exact(&mut body).expect("read an answer");
        let size = 4 + body.len();
        let mut body = Bytes::from(body);
        let version = ApiKey::Fetch.response_header_version(12);
        ResponseHeader::decode(&mut body, version).expect("a response header");
        let r = FetchResponse::decode(&mut body, 12).expect("a Fetch response");
        let partition = &r.responses[0].partitions[0];
        assert_eq!(partition.error_code, 0, "a Fetch failed");
        assert!(
            partition.records.as_ref().is_some_and(|r| !r.is_empty()),
            "no records"
        );
        acks.push((Instant::now(), size));
    }
    acks
}

/// Bytes per second acknowledged after `from` (see the module's measure),
/// and over how long. With a single acknowledgement after `from`, its
/// bytes over the time since `from`.
fn rate(acks: &[(Instant, usize)], from: Instant) -> (f64, Duration) {
    let first = acks
        .iter()
        .position(|(at, _)| *at >= from)
        .expect("an acknowledgement after the warm-up");
    let (end, _) = *acks.last().expect("acknowledgements");
    let (start, counted) = match &acks[first..] {
        [(_, only)] => (from, *only),
        [(start, _), rest @ ..] => (*start, rest.iter().map(|(_, n)| n).sum()),
        [] => unreachable!("found above"),
    };
    let over = end - start;
    (counted as f64 / over.as_secs_f64(), over)
}

/// Merges several clients' acknowledgements in time order.
fn merged(all: Vec<Acks>) -> Acks {
    let mut acks: Acks = all.into_iter().flatten().collect();
    acks.sort_by_key(|(at, _)| *at);
    acks
}

fn leak(s: String) -> &'static str {
    s.leak()
}

/// `what`'s rate as a ratio to `quota`, and over how long it was measured.
fn measured(what: &str, acks: &[(Instant, usize)], from: Instant, quota: f64) -> (f64, Duration) {
    let (got, over) = rate(acks, from);
    let ratio = got / quota;
    eprintln!("{what}: {got:.0} B/s over {over:?}, {ratio:.3} of its quota");
    (ratio, over)
}

/// Every rate measured over 10 s at least, within 10% of its quota.
fn assert_all_within(rates: &[(String, (f64, Duration))]) {
    for (what, (ratio, over)) in rates {
        assert!(
            *over >= Duration::from_secs(10),
            "{what}: measured over {over:?} only"
        );
        assert!(
            (ratio - 1.0).abs() <= 0.1,
            "{what}: {ratio:.3} of its quota; all: {rates:.3?}"
        );
    }
}

/// Tansu with the topics, and the proxy in front with the three clusters
/// (`flood`, `fair`, `drink`): their bootstrap addresses.
fn start() -> (Tansu, Proxy, [String; 3]) {
    let tansu = Tansu::start();
    tansu.create_topic("quota", 1);
    tansu.create_topic("fetched", 1);
    // What case 4 fetches, written to the broker directly.
    let mut direct = connect(&tansu.addr);
    for id in 1..=4 {
        let frame = produce_frame("filler", "fetched", 64 * 1024, id);
        assert!(produce(&mut direct, &frame));
    }
    let ports = [ports(2), ports(2), ports(2)];
    let filter = |config: String| {
        format!("    filters:\n      - type: quota\n        config: {{ {config} }}\n")
    };
    let filters = [
        format!("produceBytesPerSecond: {}", CLUSTER_QUOTA as u64),
        format!(
            "perClientId: {{ produceBytesPerSecond: {} }}",
            CLIENT_QUOTA as u64
        ),
        format!("fetchBytesPerSecond: {}", FETCH_QUOTA as u64),
    ];
    let clusters: Vec<String> = ["flood", "fair", "drink"]
        .iter()
        .zip(ports)
        .zip(filters)
        .map(|((name, port), f)| tansu_cluster(name, &tansu.addr, port, &filter(f)))
        .collect();
    let proxy = Proxy::start(&with_drain("1s", &clusters));
    (tansu, proxy, ports.map(|p| format!("127.0.0.1:{p}")))
}

#[test]
fn clients_that_ignore_throttling_are_held_to_their_quota_by_the_proxy() {
    let (_tansu, proxy, [flood, fair, drink]) = start();
    let started = Instant::now();
    let (from, until) = (started + WARM_UP, started + RUN);
    let spawn = |addr: &str, id: &'static str, value: usize, reconnect: bool, frames: usize| {
        let addr = addr.to_owned();
        thread::spawn(move || client(addr, id, value, reconnect, until, frames))
    };
    // 1: 64 KiB frames, a new connection each, from two threads.
    let reconnecting: Vec<_> = (0..2)
        .map(|_| spawn(&flood, "reconnecting", 64 * 1024, true, usize::MAX))
        .collect();
    // 2: frames of six seconds of quota; four of them (the last
    // acknowledged about 17 s in, with the warm-up skipping the first).
    let big = {
        let addr = fair.clone();
        let value = 6 * CLIENT_QUOTA as usize;
        thread::spawn(move || client(addr, "big", value, false, started + RUN * 2, 4))
    };
    // 3: sixteen client ids, 32 KiB frames, the even ones reconnecting.
    let many: Vec<_> = (0..FAIR_CLIENTS)
        .map(|i| {
            let id = leak(format!("fair-{i}"));
            spawn(&fair, id, 32 * 1024, i % 2 == 0, usize::MAX)
        })
        .collect();
    // 4: a new connection for every Fetch.
    let drinker = thread::spawn(move || fetcher(drink, until));
    let reconnecting = merged(
        reconnecting
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect(),
    );
    let many: Vec<Acks> = many.into_iter().map(|t| t.join().unwrap()).collect();
    let big = big.join().unwrap();
    let drinker = drinker.join().unwrap();
    let mut rates = vec![(
        "a client reconnecting for every Produce".to_owned(),
        measured("reconnecting", &reconnecting, from, CLUSTER_QUOTA),
    )];
    let what = "a consumer reconnecting for every Fetch".to_owned();
    rates.push((what, measured("drinker", &drinker, from, FETCH_QUOTA)));
    let what = "frames of six seconds of quota".to_owned();
    rates.push((what, measured("big", &big, from, CLIENT_QUOTA)));
    for (i, acks) in many.iter().enumerate() {
        let what = format!("client fair-{i} of {FAIR_CLIENTS}");
        rates.push((what.clone(), measured(&what, acks, from, CLIENT_QUOTA)));
    }
    assert_all_within(&rates);
    let held = |cluster: &str| {
        proxy.metric(&format!(
            "sluice_quota_held_seconds_total{{cluster=\"{cluster}\",kind=\"produce\"}}"
        ))
    };
    assert!(held("flood") > 1.0, "held {} s", held("flood"));
    assert!(held("fair") > 1.0, "held {} s", held("fair"));
    let fetch_held = "sluice_quota_held_seconds_total{cluster=\"drink\",kind=\"fetch\"}";
    assert!(
        proxy.metric(fetch_held) > 1.0,
        "held {} s",
        proxy.metric(fetch_held)
    );
    proxy.assert_clean_logs();
}
