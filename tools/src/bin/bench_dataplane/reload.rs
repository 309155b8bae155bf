//! Requests on an unchanged cluster while 100 reloads run back to back, each
//! modifying another of 1,000 clusters, against the same requests with no
//! reload; and the reloads' own timing through the admin API.

use std::time::Instant;

use sluice_admin_api::ReloadApplied;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::config;

use crate::rig::{Held, Path, Rig};
use sluice_tools::record::{Row, Target};

const SECTION: &str = "reload";
const CLUSTERS: u16 = 1000;
const RELOADS: u32 = 100;

/// The configuration: cluster `bench` in front of the broker, then 999
/// clusters with no broker behind them; `bump` modifies cluster `which`.
fn configuration(upstream: &str, base: u16, which: u16, bump: u32) -> String {
    let mut clusters = vec![config::tansu_cluster("bench", upstream, base, "")];
    for i in 1..CLUSTERS {
        let port = base + 2 * i;
        let max = if i == which { 1000 + bump } else { 1000 };
        clusters.push(format!(
            "  - name: idle-{i}\n    upstream: {{ bootstrapServers: [\"127.0.0.1:9\"] }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: 127.0.0.1, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n    limits: {{ maxConnections: {max} }}\n",
            port + 1
        ));
    }
    config::with_drain("1s", &clusters)
}

/// Reload timings through the admin API, in milliseconds.
#[derive(Default)]
struct Timings {
    commit: Vec<f64>,
    wall: Vec<f64>,
    validate: Vec<f64>,
}

/// Sends 100 reloads back to back, each modifying another cluster.
fn reloads(proxy: &Proxy, upstream: &str, base: u16, bump: &mut u32, t: &mut Timings) {
    for n in 0..RELOADS {
        *bump += 1;
        let text = configuration(upstream, base, 1 + (n as u16 * 7) % (CLUSTERS - 1), *bump);
        if n % 10 == 0 {
            let start = Instant::now();
            let v = proxy.validate(&text);
            t.validate.push(start.elapsed().as_secs_f64() * 1e3);
            assert_eq!(v.status, 200, "{}", v.body);
        }
        let start = Instant::now();
        let answer = proxy.reload(&text);
        t.wall.push(start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(answer.status, 200, "{}", answer.body);
        t.commit.push(answer.parse::<ReloadApplied>().duration_ms);
    }
}

/// Runs `reps` rounds of four windows (through the proxy and direct to the
/// broker, each with 100 reloads and with none for as long), in rotating
/// order, and emits the figures. The direct windows are the control: their
/// requests never touch the proxy, so what reloads do to them is what the
/// machine does, not the data path.
pub(crate) fn run(rig: &mut Rig, reps: usize, rate: u32) {
    let upstream = rig.broker(Path::Direct).addr.clone();
    let base = ports(2 * CLUSTERS);
    let via_proxy = format!("127.0.0.1:{base}");
    let proxy = Proxy::start(&configuration(&upstream, base, 0, 0));
    let topic = rig.topic(Path::Direct);
    let rate = rate.to_string();
    let (mut bump, mut timings) = (0, Timings::default());
    // Warm-up, and how long a window of reloads lasts.
    let started = Instant::now();
    reloads(&proxy, &upstream, base, &mut bump, &mut Timings::default());
    let mut window = started.elapsed();
    let windows = [(true, true), (true, false), (false, true), (false, false)];
    let mut p99: [Vec<f64>; 4] = Default::default();
    for rep in 0..reps {
        eprintln!("reload: repetition {} of {reps}", rep + 1);
        for k in 0..windows.len() {
            let w = (k + rep) % windows.len();
            let (proxied, reloading) = windows[w];
            let bootstrap = if proxied { &via_proxy } else { &upstream };
            let held = Held::start(&["latency", bootstrap, &topic, &rate, "120", "1"]);
            if reloading {
                let started = Instant::now();
                reloads(&proxy, &upstream, base, &mut bump, &mut timings);
                window = started.elapsed();
            } else {
                std::thread::sleep(window);
            }
            p99[w].push(held.finish()["p99_ms"].as_f64().unwrap_or(f64::NAN));
        }
    }
    emit_latency(p99, &rate);
    emit_timings(timings);
    proxy.assert_clean_logs();
    rig.drop_topic(Path::Direct, &topic);
}

/// The unchanged cluster's p99 with and without reloads, and the direct
/// control's (`p99`: proxied busy, proxied quiet, direct busy, direct quiet).
fn emit_latency(p99: [Vec<f64>; 4], rate: &str) {
    let [proxied_busy, proxied_quiet, direct_busy, direct_quiet] = p99;
    Row::new(SECTION, format!("unchanged cluster p99 during {RELOADS} reloads"), "ms", proxied_busy.clone())
        .baseline("no reloads", proxied_quiet)
        .target(Target::RatioAtMost(1.10), "<= 1.10x no reloads")
        .note(format!(
            "{rate} req/s of 1 KiB, acks=1, on cluster bench; each reload modifies another of {CLUSTERS} clusters, back to back"
        ))
        .emit();
    Row::new(
        SECTION,
        format!("control: direct to the broker, p99 during the same {RELOADS} reloads"),
        "ms",
        direct_busy.clone(),
    )
    .baseline("no reloads", direct_quiet)
    .note("requests that never touch the proxy: what the reloads' CPU does to the machine")
    .emit();
    Row::new(
        SECTION,
        "unchanged cluster p99 during reloads vs the control",
        "ms",
        proxied_busy,
    )
    .baseline("direct during reloads", direct_busy)
    .emit();
}

/// How long the admin API's reloads and validations took.
fn emit_timings(timings: Timings) {
    let Timings {
        commit,
        wall,
        validate,
    } = timings;
    Row::new(
        SECTION,
        format!("admin API: reload, 1 of {CLUSTERS} modified (receipt to commit)"),
        "ms",
        commit,
    )
    .target(Target::AtMost(100.0), "<= 100 ms")
    .note("durationMs of every reload response; spread is min-max over all reloads")
    .emit();
    Row::new(
        SECTION,
        format!("admin API: reload, 1 of {CLUSTERS} modified (HTTP round trip)"),
        "ms",
        wall,
    )
    .emit();
    Row::new(
        SECTION,
        format!("admin API: validate, {CLUSTERS} clusters (HTTP round trip)"),
        "ms",
        validate,
    )
    .target(Target::AtMost(50.0), "<= 50 ms")
    .emit();
}
