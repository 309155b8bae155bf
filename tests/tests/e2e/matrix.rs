//! The compatibility matrix: brokers {tansu, librdkafka's three-broker mock
//! cluster} × clients {librdkafka (confluent-kafka), kafka-python, aiokafka,
//! kcat (Debian's, librdkafka 2.0.2)}, each cell direct and through the
//! proxy: produce 20 keyed messages and one of 700 kB (a large frame),
//! consume them all with a consumer group, commit, and read the committed
//! offsets back. A cell that works direct must work through the proxy. A
//! cell that fails direct too is the broker's or the client's own limit:
//! it must be one of [`LIMITS`], with the reason, never skipped silently.
//! The proxy's own paths against each broker (a cold broker port, a
//! reload's upstream check) are in `own_client`; SASL against tansu in
//! `sasl` (the mock cluster has no SASL).

use std::fmt::Write as _;
use std::process::Command;
use std::time::Duration;

use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::peers::{MockCluster, TANSU_NODE_ID, Tansu};
use sluice_tests::python;

use crate::own_client::{cluster, config};

/// The client libraries.
const CLIENTS: [&str; 4] = ["librdkafka", "kafka-python", "aiokafka", "kcat"];
/// Small messages per cell, and the large one's size.
const COUNT: usize = 20;
const LARGE: usize = 700_000;

/// The known limits: (broker, client, what its failure says, why). A cell
/// that fails direct must match one; a limit that no longer fails is
/// reported too, so this list stays true.
const LIMITS: [(&str, &str, &str, &str); 2] = [
    (
        "mock",
        "kafka-python",
        "Unable to bootstrap",
        "kafka-python 3.0 cannot read the mock's UNSUPPORTED_VERSION answer to \
         ApiVersions v4 (a v0-shaped body, as KIP-511 specifies) and aborts",
    ),
    (
        "tansu",
        "kcat",
        "ApiVersionRequest failed",
        "librdkafka 2.0.2 (Debian's kcat) reads tansu's ApiVersions answer short \
         (Read underflow)",
    ),
];

/// One broker under test, with its topics made.
struct Broker {
    /// Its bootstrap address.
    addr: String,
    /// (first node id, how many).
    nodes: (i32, u16),
    _keep: Box<dyn std::any::Any + Send>,
}

impl Broker {
    fn start(name: &'static str, topics: &[String]) -> Broker {
        if name == "tansu" {
            let tansu = Tansu::start();
            for t in topics {
                tansu.create_topic(t, 1);
            }
            return Broker {
                addr: tansu.addr.clone(),
                nodes: (TANSU_NODE_ID, 1),
                _keep: Box::new(tansu),
            };
        }
        let specs: Vec<String> = topics.iter().map(|t| format!("{t}:3")).collect();
        let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
        let mock = MockCluster::start(3, &specs);
        Broker {
            addr: mock.brokers[0].clone(),
            nodes: (1, 3),
            _keep: Box::new(mock),
        }
    }
}

/// The topic (and group) of one cell.
fn topic(client: &str, path: &str) -> String {
    format!("matrix-{client}-{path}")
}

/// Runs one cell; `Err` says what went wrong.
fn cell(client: &str, bootstrap: &str, topic: &str) -> Result<(), String> {
    let group = format!("g-{topic}");
    let report = if client == "kcat" {
        kcat(bootstrap, topic, &group)?
    } else {
        let (count, large) = (COUNT.to_string(), LARGE.to_string());
        python::run_json(
            "matrix.py",
            &[client, bootstrap, topic, &group, &count, &large],
            Duration::from_secs(150),
        )
    };
    let want = serde_json::json!(COUNT + 1);
    let ok = report["acked"] == want
        && report["unique"] == want
        && report["large"] == true
        && report["committed"] == want;
    if ok { Ok(()) } else { Err(report.to_string()) }
}

/// kcat's cell: produce from a file, consume with a group (`-G`, which
/// commits as it closes), and the committed offsets read with librdkafka.
fn kcat(bootstrap: &str, topic: &str, group: &str) -> Result<serde_json::Value, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let input = dir.path().join("messages");
    let mut lines = String::new();
    for i in 0..COUNT {
        let _ = writeln!(lines, "{i}:value-{i}");
    }
    let _ = writeln!(lines, "large:{}", "x".repeat(LARGE));
    std::fs::write(&input, lines).map_err(|e| e.to_string())?;
    let max = format!("message.max.bytes={}", LARGE * 2);
    let produce = run(Command::new("kcat")
        .args([
            "-b", bootstrap, "-P", "-t", topic, "-K", ":", "-X", &max, "-l",
        ])
        .arg(&input))?;
    let consumed = run(Command::new("timeout").args([
        "60",
        "kcat",
        "-b",
        bootstrap,
        "-G",
        group,
        topic,
        "-X",
        "auto.offset.reset=earliest",
        "-X",
        "session.timeout.ms=10000",
        "-X",
        &format!("fetch.max.bytes={}", LARGE * 2),
        "-c",
        &(COUNT + 1).to_string(),
        "-q",
        "-f",
        "%k %S\\n",
    ]))?;
    let keys: std::collections::BTreeMap<&str, &str> =
        consumed.lines().filter_map(|l| l.split_once(' ')).collect();
    let committed = python::run_json(
        "matrix.py",
        &["committed", bootstrap, topic, group],
        Duration::from_secs(60),
    );
    let _ = produce;
    Ok(serde_json::json!({
        "acked": keys.len(),
        "unique": keys.len(),
        "large": keys.get("large") == Some(&LARGE.to_string().as_str()),
        "committed": committed["committed"],
    }))
}

/// Runs a command to its end: its standard output, or why it failed.
fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | "))
    }
}

/// Every cell of one broker: (client, direct, through the proxy).
type Row = (&'static str, Result<(), String>, Result<(), String>);

fn broker_rows(name: &'static str) -> Vec<Row> {
    let topics: Vec<String> = CLIENTS
        .iter()
        .flat_map(|c| [topic(c, "direct"), topic(c, "proxy")])
        .collect();
    let broker = Broker::start(name, &topics);
    let (first, count) = broker.nodes;
    let base = ports(count + 1);
    let proxy = Proxy::start(&config(&[cluster(
        "matrix",
        &broker.addr,
        base,
        first,
        count,
    )]));
    let through = format!("127.0.0.1:{base}");
    let rows = CLIENTS
        .iter()
        .map(|c| {
            let direct = cell(c, &broker.addr, &topic(c, "direct"));
            let proxied = cell(c, &through, &topic(c, "proxy"));
            (*c, direct, proxied)
        })
        .collect();
    drop(proxy);
    drop(broker);
    rows
}

/// The known limit of a cell, if it is one.
fn limit(broker: &str, client: &str) -> Option<(&'static str, &'static str)> {
    LIMITS
        .iter()
        .find(|(b, c, _, _)| *b == broker && *c == client)
        .map(|(_, _, says, why)| (*says, *why))
}

#[test]
fn every_client_works_through_the_proxy_wherever_it_works_direct() {
    let brokers =
        ["tansu", "mock"].map(|name| (name, std::thread::spawn(move || broker_rows(name))));
    let mut table =
        String::from("\n| broker | client | direct | through the proxy |\n|---|---|---|---|\n");
    let mut wrong = Vec::new();
    for (name, rows) in brokers {
        for (client, direct, proxied) in rows.join().expect("broker thread") {
            let show = |r: &Result<(), String>| {
                r.as_ref()
                    .map_or_else(|e| format!("fails: {e}"), |()| "ok".into())
            };
            let _ = writeln!(
                table,
                "| {name} | {client} | {} | {} |",
                show(&direct),
                show(&proxied)
            );
            match (&direct, &proxied, limit(name, client)) {
                (Ok(()), Ok(()), None) => {}
                (Ok(()), Err(e), _) => wrong.push(format!(
                    "{name} × {client}: works direct, fails through the proxy: {e}"
                )),
                (Ok(()), Ok(()), Some((_, why))) => wrong.push(format!(
                    "{name} × {client}: listed as a limit ({why}) but works: take it off LIMITS"
                )),
                (Err(e), _, Some((says, _))) if e.contains(says) => {}
                (Err(e), _, _) => wrong.push(format!(
                    "{name} × {client}: fails direct, and not as a known limit says: {e}"
                )),
            }
        }
    }
    eprintln!("{table}");
    assert!(wrong.is_empty(), "{}\n{table}", wrong.join("\n"));
}
