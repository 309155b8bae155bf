//! Which broker to measure against: tansu (in-memory storage) or
//! librdkafka's mock cluster, each driven directly by the same rdkafka
//! producer; and whether the broker or the client is the bottleneck.

use sluice_tests::peers::MockCluster;

use crate::rig::{Path, Rig, cpu_seconds, load};
use sluice_tools::record::Row;

const SECTION: &str = "broker choice";

/// Alternates `reps` produce runs to each broker and emits the figures.
pub(crate) fn run(rig: &mut Rig, reps: usize, megabytes: u32) {
    let mock = MockCluster::start(1, &["bench:1"]);
    let mb = megabytes.to_string();
    let tansu_pid = rig.broker(Path::Direct).pid();
    let (mut tansu, mut mocked) = (Vec::new(), Vec::new());
    let (mut tansu_cpu, mut mock_cpu, mut client_cpu) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..=reps {
        let topic = rig.topic(Path::Direct);
        let c0 = cpu_seconds(tansu_pid);
        let t = load(&["produce", rig.bootstrap(Path::Direct), &topic, &mb, "1"]);
        let tc = cpu_seconds(tansu_pid) - c0;
        rig.drop_topic(Path::Direct, &topic);
        let c0 = cpu_seconds(mock.pid());
        let m = load(&["produce", &mock.brokers[0], "bench", &mb, "1"]);
        let mc = cpu_seconds(mock.pid()) - c0;
        if rep == 0 {
            continue; // warm-up
        }
        let gb = |r: &serde_json::Value| r["bytes"].as_f64().unwrap_or(f64::NAN) / 1e9;
        let mbps = |r: &serde_json::Value| r["mbps"].as_f64().unwrap_or(f64::NAN);
        tansu.push(mbps(&t));
        mocked.push(mbps(&m));
        tansu_cpu.push(tc / gb(&t));
        mock_cpu.push(mc / gb(&m));
        client_cpu.push(t["cpu"].as_f64().unwrap_or(f64::NAN) / gb(&t));
    }
    Row::new(
        SECTION,
        "produce acks=1 direct: tansu 0.6 (memory)",
        "MB/s",
        tansu,
    )
    .baseline("librdkafka mock cluster", mocked)
    .emit();
    Row::new(
        SECTION,
        "broker CPU per GB produced: tansu",
        "CPU-s/GB",
        tansu_cpu,
    )
    .baseline("librdkafka mock cluster", mock_cpu)
    .emit();
    Row::new(
        SECTION,
        "client CPU per GB produced (rdkafka, Python)",
        "CPU-s/GB",
        client_cpu,
    )
    .emit();
}
