//! Plaintext on both sides: the records a real client (librdkafka) produces
//! and fetches through the proxy go from socket to socket by `splice(2)`,
//! never copied into the proxy's memory, and the bytes arrive intact (the
//! consumer reads every record). `sluice_spliced_bytes_total` says how many
//! of `sluice_bytes_total` took that way.

use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
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

#[test]
fn produced_and_fetched_records_are_spliced_between_plaintext_sockets() {
    let tansu = Tansu::start();
    tansu.create_topic("spliced", 1);
    let base = ports(2);
    let proxy = Proxy::start(&with_drain(
        "1s",
        &[tansu_cluster("plain", &tansu.addr, base, "")],
    ));
    let bootstrap = format!("127.0.0.1:{base}");
    let mb = MEGABYTES.to_string();
    let produced = python::run_json(
        "bench_load.py",
        &["produce", &bootstrap, "spliced", &mb, "1"],
        TIMEOUT,
    );
    no_errors(&produced, "produce");
    // Every 1 KiB record, read back through the proxy.
    let records = (MEGABYTES * 1024).to_string();
    let consumed = python::run_json(
        "bench_load.py",
        &["consume", &bootstrap, "spliced", &records],
        TIMEOUT,
    );
    no_errors(&consumed, "consume");

    let series = |family: &str, direction: &str| {
        proxy.metric(&format!(
            "sluice_{family}_total{{cluster=\"plain\",direction=\"{direction}\"}}"
        ))
    };
    let payload = f64::from(MEGABYTES) * 1024.0 * 1024.0;
    for direction in ["to_upstream", "to_client"] {
        let (all, spliced) = (
            series("bytes", direction),
            series("spliced_bytes", direction),
        );
        eprintln!("splice: {direction}: {spliced} of {all} bytes spliced");
        assert!(all >= payload, "{direction}: only {all} bytes forwarded");
        // The frames' heads (and small frames) pass through the chunk.
        assert!(
            spliced >= 0.9 * all,
            "{direction}: {spliced} of {all} bytes spliced"
        );
    }
}
