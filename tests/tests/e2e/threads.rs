//! Client connections run on the connection threads (`run
//! --connection-threads N`), a current-thread runtime each: a real client's
//! records (librdkafka producing and consuming through the proxy to tansu)
//! are moved by the threads named `sluice-conn-*`, not by the main
//! runtime's workers; with `--connection-threads 0` there are no such
//! threads and the main runtime's workers move them, as before. The ready
//! log line says how many run. Which thread did the work is read from the
//! kernel's per-thread CPU time (`/proc/PID/task/*/schedstat`).

use std::collections::BTreeMap;
use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::{Options, Proxy};
use sluice_tests::config::{tansu_cluster, with_drain};
use sluice_tests::peers::Tansu;
use sluice_tests::python;

const TIMEOUT: Duration = Duration::from_secs(120);

/// CPU nanoseconds per thread name of `pid` (threads of one name summed).
fn cpu_by_thread(pid: u32) -> BTreeMap<String, u64> {
    let mut by_name = BTreeMap::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the proxy's threads");
    for task in tasks.filter_map(Result::ok) {
        let read = |f: &str| std::fs::read_to_string(task.path().join(f)).unwrap_or_default();
        let nanos: u64 = read("schedstat")
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        *by_name.entry(read("comm").trim().to_owned()).or_default() += nanos;
    }
    by_name
}

/// CPU of the threads whose name starts with `prefix`, between two reads.
fn spent(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>, prefix: &str) -> u64 {
    after
        .iter()
        .filter(|(name, _)| name.starts_with(prefix))
        // A blocking-pool thread that ended between the reads takes its
        // time with it: never below zero.
        .map(|(name, n)| n.saturating_sub(before.get(name).copied().unwrap_or(0)))
        .sum()
}

/// Starts a proxy with `args`, moves 16 MB each way through it, and returns
/// the proxy's `connection_threads` at ready, its thread names, and the CPU
/// (ns) of its connection threads and of its main runtime's workers.
fn run(tansu: &Tansu, topic: &str, args: &[&str]) -> (u64, Vec<String>, u64, u64) {
    tansu.create_topic(topic, 1);
    let base = ports(2);
    let options = Options {
        args: args.iter().map(|a| a.to_string()).collect(),
        ..Options::default()
    };
    let config = with_drain("1s", &[tansu_cluster("threads", &tansu.addr, base, "")]);
    let mut proxy = Proxy::launch(tempfile::tempdir().expect("tempdir"), &config, &options);
    let ready = proxy.wait_for_log("sluice-proxy ready", Duration::from_secs(5));
    let ready: serde_json::Value = serde_json::from_str(&ready).expect("a JSON log line");
    let threads = ready["connection_threads"]
        .as_u64()
        .expect("connection_threads");
    let bootstrap = format!("127.0.0.1:{base}");
    let before = cpu_by_thread(proxy.pid());
    for load in [
        ["produce", &bootstrap, topic, "16", "1"],
        ["consume", &bootstrap, topic, "16384", ""],
    ] {
        let args: Vec<&str> = load.into_iter().filter(|a| !a.is_empty()).collect();
        let report = python::run_json("bench_load.py", &args, TIMEOUT);
        assert_eq!(
            report["errors"].as_array().map(Vec::len),
            Some(0),
            "{report}"
        );
    }
    let after = cpu_by_thread(proxy.pid());
    let names = after.keys().cloned().collect();
    let conn = spent(&before, &after, "sluice-conn-");
    let main = spent(&before, &after, "tokio-rt-worker");
    proxy.assert_clean_logs();
    (threads, names, conn, main)
}

#[test]
fn connections_run_on_the_connection_threads_and_on_the_main_runtime_with_none() {
    let tansu = Tansu::start();

    let (threads, names, conn, main) = run(&tansu, "on-threads", &["--connection-threads", "2"]);
    eprintln!(
        "--connection-threads 2: {names:?}, connection threads {conn} ns, main runtime {main} ns"
    );
    assert_eq!(threads, 2);
    for name in ["sluice-conn-0", "sluice-conn-1"] {
        assert!(
            names.iter().any(|n| n == name),
            "no thread {name}: {names:?}"
        );
    }
    assert!(
        conn > 4 * main,
        "the connection threads moved the records: {conn} ns against the main runtime's {main} ns"
    );

    let (threads, names, conn, main) = run(&tansu, "on-main", &["--connection-threads", "0"]);
    eprintln!(
        "--connection-threads 0: {names:?}, connection threads {conn} ns, main runtime {main} ns"
    );
    assert_eq!(threads, 0);
    assert!(
        !names.iter().any(|n| n.starts_with("sluice-conn-")),
        "connection threads with --connection-threads 0: {names:?}"
    );
    assert_eq!(conn, 0);
    assert!(main > 0, "the main runtime moved the records");
}
