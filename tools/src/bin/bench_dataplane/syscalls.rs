//! Where the time per request goes, by measures that do not depend on a
//! quiet machine (issue 28): the system calls and context switches of the
//! process in the middle per request, sluice-proxy against haproxy, for the
//! same fixed workload at each record size.
//!
//! The workload is a raw Kafka client (`sluice_tests::kafka::Conn`) with one
//! request in flight: `requests` Produce requests (v9, acks=1), each one
//! batch of one record of the size, then as many Fetch requests (v12), each
//! for the next offset with room for one batch, so the bytes and the number
//! of requests are the same on both paths, and no coalescing by a client
//! library or by timing changes them. Two passes per path and size: one
//! with nothing attached, which reads the threads' context switches
//! (`/proc/PID/task/*/status`) and CPU time (`schedstat`) before and after;
//! one under `strace -c -f -p PID`, which counts the system calls (strace
//! slows the process, so its pass gives no times).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, ProduceRequest, ProduceResponse, TopicName,
    fetch_request, produce_request,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use sluice_tests::kafka::Conn;
use sluice_tools::record::Row;

use crate::rig::{Path, Rig, cpu_seconds};

const SECTION: &str = "per request (one in flight)";
/// Unrecorded requests of each kind before each pass.
const WARM: usize = 20;
/// Times a pass strace lost is tried in all.
const ATTEMPTS: usize = 3;

/// A figure per request: what, its unit, how to read it from a pass.
type Figure = (&'static str, &'static str, fn(&Counts) -> f64);

/// A path's produce and fetch counts: without strace, and under it.
type PerPath = (Path, [Counts; 2], [Counts; 2]);

/// Counters of the middle process over one pass.
#[derive(Debug, Default, Clone)]
struct Counts {
    voluntary: f64,
    involuntary: f64,
    cpu_us: f64,
    /// System calls by name (the strace pass only).
    calls: BTreeMap<String, f64>,
    /// Requests the pass made (a Fetch answered empty is asked again).
    requests: usize,
}

/// Runs the workload through sluice-proxy and haproxy at every size and
/// emits the counts per request.
pub(crate) fn run(rig: &mut Rig, requests: usize) {
    let strace = Command::new("strace").arg("-V").output().is_ok();
    if !strace {
        eprintln!("syscalls: strace is not installed: context switches only");
    }
    for (size, label) in crate::sweep::named_sizes() {
        let mut per: Vec<PerPath> = Vec::new();
        for path in [Path::Sluice, Path::Haproxy] {
            let pid = rig.middle(path).expect("a process in the middle");
            let quiet = passes(rig, path, size, requests, pid, false);
            let traced = if strace {
                passes(rig, path, size, requests, pid, true)
            } else {
                Default::default()
            };
            per.push((path, quiet, traced));
        }
        emit(label, requests, size, &per);
    }
}

/// One produce and one fetch pass: their counts.
fn passes(rig: &mut Rig, path: Path, size: usize, n: usize, pid: u32, traced: bool) -> [Counts; 2] {
    let topic = rig.topic(path);
    let mut conn = Conn::connect(rig.bootstrap(path));
    let batch = batch(size);
    let mut next = 0i64;
    for _ in 0..WARM {
        produce(&mut conn, &topic, &batch);
    }
    let mut produced = Counts::default();
    for _ in 0..ATTEMPTS {
        produced = measure(pid, traced, || {
            for _ in 0..n {
                produce(&mut conn, &topic, &batch);
            }
        });
        produced.requests = n;
        if !lost(&produced, traced) {
            break;
        }
    }
    for _ in 0..WARM {
        fetch(&mut conn, &topic, next, size);
        next += 1;
    }
    let mut fetched = Counts::default();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            // Records for another pass.
            (0..n).for_each(|_| produce(&mut conn, &topic, &batch));
        }
        let mut asked = 0;
        fetched = measure(pid, traced, || {
            for _ in 0..n {
                asked += fetch(&mut conn, &topic, next, size);
                next += 1;
            }
        });
        fetched.requests = asked;
        if !lost(&fetched, traced) {
            break;
        }
    }
    drop(conn);
    rig.drop_topic(path, &topic);
    [produced, fetched]
}

/// Whether strace lost a traced pass (now and then its summary counts
/// next to nothing): fewer calls than requests. Such a pass is run again.
fn lost(c: &Counts, traced: bool) -> bool {
    traced && c.calls.values().sum::<f64>() < c.requests as f64
}

/// The counts of `pid` while `work` runs, under strace when `traced`.
fn measure(pid: u32, traced: bool, work: impl FnOnce()) -> Counts {
    let Some(trace) = traced.then(|| Trace::attach(pid)) else {
        let before = switches(pid);
        let cpu = cpu_seconds(pid);
        work();
        let after = switches(pid);
        return Counts {
            voluntary: after.0 - before.0,
            involuntary: after.1 - before.1,
            cpu_us: (cpu_seconds(pid) - cpu) * 1e6,
            ..Counts::default()
        };
    };
    work();
    Counts {
        calls: trace.finish(),
        ..Counts::default()
    }
}

/// Voluntary and involuntary context switches of all of `pid`'s threads.
fn switches(pid: u32) -> (f64, f64) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (f64::NAN, f64::NAN);
    };
    let field = |status: &str, name: &str| -> f64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0.0)
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .fold((0.0, 0.0), |(v, i), s| {
            (
                v + field(&s, "voluntary_ctxt_switches:"),
                i + field(&s, "nonvoluntary_ctxt_switches:"),
            )
        })
}

/// `strace -c -f -p PID`, attached to every thread.
struct Trace {
    child: std::process::Child,
    out: tempfile::NamedTempFile,
}

impl Trace {
    fn attach(pid: u32) -> Trace {
        let out = tempfile::NamedTempFile::new().expect("strace output file");
        let mut child = Command::new("strace")
            .args(["-c", "-f", "-p", &pid.to_string(), "-o"])
            .arg(out.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start strace");
        // strace says "Process N attached with M threads" once all are.
        let stderr = BufReader::new(child.stderr.take().expect("strace stderr"));
        for line in stderr.lines().map_while(Result::ok) {
            if line.contains("attached") {
                break;
            }
        }
        Trace { child, out }
    }

    /// Detaches (SIGINT) and returns the calls by name.
    fn finish(mut self) -> BTreeMap<String, f64> {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        let text = std::fs::read_to_string(self.out.path()).unwrap_or_default();
        parse_strace(&text)
    }
}

/// The `calls` column of strace's summary, by syscall.
fn parse_strace(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let (name, calls) = (t.last()?, t.get(3)?.parse::<f64>().ok()?);
            (t.len() >= 5 && *name != "total").then(|| ((*name).to_owned(), calls))
        })
        .collect()
}

/// One record batch holding one record of `size` bytes.
fn batch(size: usize) -> Bytes {
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
        value: Some(Bytes::from(vec![b'x'; size])),
        headers: Default::default(),
        delete_horizon: false,
    };
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, &[record], &options).expect("encode a batch");
    buf.freeze()
}

fn produce(conn: &mut Conn, topic: &str, batch: &Bytes) {
    let mut partition = produce_request::PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(batch.clone());
    let mut data = produce_request::TopicProduceData::default();
    data.name = TopicName(StrBytes::from_string(topic.to_owned()));
    data.partition_data = vec![partition];
    let mut request = ProduceRequest::default();
    request.acks = 1;
    request.timeout_ms = 5000;
    request.topic_data = vec![data];
    let r: ProduceResponse = conn.call(ApiKey::Produce, 9, &request);
    let code = r.responses[0].partition_responses[0].error_code;
    assert_eq!(code, 0, "produce to {topic}");
}

/// Fetches the batch at `offset`: the requests it took (tansu sometimes
/// answers a Fetch with no records although they are there: asked again).
fn fetch(conn: &mut Conn, topic: &str, offset: i64, size: usize) -> usize {
    // Room for one batch of one record, not two.
    let room = i32::try_from(size + 100).unwrap_or(i32::MAX);
    let partition = fetch_request::FetchPartition::default()
        .with_partition(0)
        .with_current_leader_epoch(-1)
        .with_fetch_offset(offset)
        .with_log_start_offset(-1)
        .with_partition_max_bytes(room);
    let data = fetch_request::FetchTopic::default()
        .with_topic(TopicName(StrBytes::from_string(topic.to_owned())))
        .with_partitions(vec![partition]);
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(1)
        .with_min_bytes(1)
        .with_max_bytes(room)
        .with_session_epoch(-1)
        .with_topics(vec![data]);
    for asked in 1..=100 {
        let r: FetchResponse = conn.call(ApiKey::Fetch, 12, &request);
        let got = r
            .responses
            .first()
            .and_then(|t| t.partitions.first()?.records.as_ref())
            .map_or(0, Bytes::len);
        if got > size {
            return asked;
        }
    }
    panic!("fetch at {offset} of {topic}: no records in 100 requests")
}

/// Rows per request for one size: produce and fetch, each measure, sluice
/// against haproxy; the strace breakdown on stderr.
fn emit(label: &str, n: usize, size: usize, per: &[PerPath]) {
    let find = |p: Path| per.iter().find(|(q, ..)| *q == p);
    let (Some(s), Some(h)) = (find(Path::Sluice), find(Path::Haproxy)) else {
        return;
    };
    let n = n as f64;
    let mb = n * size as f64 / 1e6;
    for (i, kind) in ["produce", "fetch"].into_iter().enumerate() {
        let total = |c: &Counts| c.calls.values().sum::<f64>();
        let figures: [Figure; 4] = [
            ("system calls", "calls", |_| f64::NAN),
            ("voluntary context switches (wake-ups)", "switches", |c| {
                c.voluntary
            }),
            ("involuntary context switches", "switches", |c| {
                c.involuntary
            }),
            ("CPU time", "us", |c| c.cpu_us),
        ];
        for (what, unit, get) in figures {
            let (sc, hc) = if unit == "calls" {
                (&s.2[i], &h.2[i])
            } else {
                (&s.1[i], &h.1[i])
            };
            let (sv, hv) = if unit == "calls" {
                (total(sc), total(hc))
            } else {
                (get(sc), get(hc))
            };
            let (sn, hn) = (sc.requests.max(1) as f64, hc.requests.max(1) as f64);
            Row::new(
                SECTION,
                format!("{label} records, {kind}: {what} per request, sluice-proxy"),
                unit,
                vec![sv / sn],
            )
            .baseline("haproxy", vec![hv / hn])
            .note(format!(
                "{n} batches one at a time ({sn} and {hn} requests), {mb:.2} MB of records; per MB: sluice {:.1}, haproxy {:.1}",
                sv / mb,
                hv / mb
            ))
            .emit();
        }
        for (name, c) in [("sluice-proxy", &s.2[i]), ("haproxy", &h.2[i])] {
            let per = c.requests.max(1) as f64;
            let list: Vec<String> = c
                .calls
                .iter()
                .filter(|(_, v)| **v / per >= 0.05)
                .map(|(k, v)| format!("{k} {:.2}", v / per))
                .collect();
            eprintln!("  {label} {kind}, {name}, per request: {}", list.join(", "));
        }
    }
}
