//! Plaintext on both sides, with a real client (librdkafka) producing and
//! fetching through the proxy: with `--splice always` the records go from
//! socket to socket by `splice(2)`, never copied into the proxy's memory;
//! by default (`auto`) nothing is spliced here, because every peer is on
//! this host (loopback), where splicing costs the receiving peer more than
//! it saves the proxy. Either way the bytes arrive intact (the consumer
//! reads every record). `sluice_spliced_bytes_total` says how many of
//! `sluice_bytes_total` were spliced.

use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::{Options, Proxy};
use sluice_tests::config::{tansu_cluster, with_drain};
use sluice_tests::peers::Tansu;
use sluice_tests::python;

const MEGABYTES: u32 = 16;
const TIMEOUT: Duration = Duration::from_secs(120);

fn no_errors(report: &serde_json::Value, what: &str) {
    assert_eq!(
        report["errors"].as_array().map(Vec::len),
        Some(0),
        "{what}: {report}"
    );
}

/// Produces and consumes MEGABYTES of records through a proxy started with
/// `args`; per direction, the bytes forwarded and those spliced.
fn through(tansu: &Tansu, topic: &str, args: &[&str]) -> Vec<(&'static str, f64, f64)> {
    tansu.create_topic(topic, 1);
    let base = ports(2);
    let options = Options {
        args: args.iter().map(|a| a.to_string()).collect(),
        ..Options::default()
    };
    let config = with_drain("1s", &[tansu_cluster("plain", &tansu.addr, base, "")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let proxy = Proxy::launch(dir, &config, &options);
    let bootstrap = format!("127.0.0.1:{base}");
    let mb = MEGABYTES.to_string();
    let produced = python::run_json(
        "bench_load.py",
        &["produce", &bootstrap, topic, &mb, "1"],
        TIMEOUT,
    );
    no_errors(&produced, "produce");
    // Every 1 KiB record, read back through the proxy.
    let records = (MEGABYTES * 1024).to_string();
    let consumed = python::run_json(
        "bench_load.py",
        &["consume", &bootstrap, topic, &records],
        TIMEOUT,
    );
    no_errors(&consumed, "consume");

    let series = |family: &str, direction: &str| {
        proxy.metric(&format!(
            "sluice_{family}_total{{cluster=\"plain\",direction=\"{direction}\"}}"
        ))
    };
    let payload = f64::from(MEGABYTES) * 1024.0 * 1024.0;
    ["to_upstream", "to_client"]
        .into_iter()
        .map(|direction| {
            let (all, spliced) = (
                series("bytes", direction),
                series("spliced_bytes", direction),
            );
            eprintln!("splice {args:?}: {direction}: {spliced} of {all} bytes spliced");
            assert!(all >= payload, "{direction}: only {all} bytes forwarded");
            (direction, all, spliced)
        })
        .collect()
}

#[test]
fn records_are_spliced_between_plaintext_sockets_always_and_copied_for_local_peers_by_default() {
    let tansu = Tansu::start();
    for (direction, all, spliced) in through(&tansu, "spliced", &["--splice", "always"]) {
        // The frames' heads (and small frames) pass through the chunk.
        assert!(
            spliced >= 0.9 * all,
            "--splice always: {direction}: {spliced} of {all} bytes spliced"
        );
    }
    for (direction, all, spliced) in through(&tansu, "copied", &[]) {
        assert_eq!(
            spliced, 0.0,
            "default (auto), peers on loopback: {direction}: {spliced} of {all} bytes spliced"
        );
    }
}
