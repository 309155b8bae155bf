//! A benign rollout over many pods (20 by default): its total time, from
//! the swap to the last pod's reload, against the canary soak plus one
//! stagger per further pod; the status requests each pod's admin API
//! serves per second while it runs (every waiting watcher asks every pod at
//! every `--peer-poll`: O(N²) for the fleet), against every pod polling it;
//! and the CPU a status request costs the proxies and the watchers.

use std::time::{Duration, Instant};

use sluice_admin_api::ConfigStatus;
use sluice_tests::fleet::{Cluster, Fleet, Spec, broker, config_with, window};
use sluice_tools::record::{Row, Target};

use crate::measure::{Served, analysis_supported, ticks};
use crate::now_ms;

const SOAK_S: u64 = 5;
const STAGGER_S: u64 = 1;
const POLL_S: u64 = 1;
/// Clock ticks per second (`getconf CLK_TCK` on Linux).
const TICKS: f64 = 100.0;

const FLAGS: [&str; 10] = [
    "--stagger",
    "1s",
    "--jitter",
    "0s",
    "--canary-soak",
    "5s",
    "--peer-timeout",
    "30s",
    "--peer-poll",
    "1s",
];

fn cluster(marker: u32, analysis: Option<&str>) -> Cluster {
    Cluster {
        max_connections: Some(1000 + marker),
        analysis: analysis.map(str::to_owned),
        ..Cluster::default()
    }
}

/// Pod `i`'s status; a loaded machine may need a few tries.
fn status(fleet: &Fleet, i: usize) -> ConfigStatus {
    (0..10)
        .find_map(|_| fleet.status(i))
        .unwrap_or_else(|| panic!("pod {i} gives no status"))
}

/// CPU ticks of every proxy and of every watcher.
fn cpu(fleet: &Fleet) -> (u64, u64) {
    fleet.pods.iter().fold((0, 0), |(p, w), pod| {
        let watcher = pod.watcher.as_ref().map_or(0, |w| ticks(w.pid()));
        (p + ticks(pod.proxy.pid()), w + watcher)
    })
}

/// What one rollout measured.
struct Measured {
    /// From the swap to the last pod's reload.
    total_ms: u128,
    /// Whether every slot applied after the one before it.
    in_order: bool,
    /// Each pod's status requests served.
    served: Vec<Served>,
    /// CPU ticks of the proxies and of the watchers during it.
    cpu: (u64, u64),
}

/// One rollout over `pods` pods, its figures.
pub(crate) fn run(pods: usize) {
    let analysis = analysis_supported().then_some("{ window: 5s }");
    let up = Instant::now();
    let mut fleet = Fleet::launch(Spec {
        pods,
        initial: config_with(&broker(), 0, &cluster(0, analysis)),
        ..Spec::new(&FLAGS)
    });
    eprintln!("{pods} pods up in {:.1} s", up.elapsed().as_secs_f64());
    let m = roll(&mut fleet, analysis);
    let expected = (SOAK_S + (pods as u64 - 1) * STAGGER_S) as f64 * 1e3;
    let with_polls = (SOAK_S + (pods as u64 - 1) * (STAGGER_S + POLL_S)) as f64 * 1e3;
    Row::new(
        "fleet",
        format!("benign rollout over {pods} pods (soak 5 s, stagger 1 s, peer poll 1 s)"),
        "ms",
        vec![m.total_ms as f64],
    )
    .baseline(
        format!("canary soak + {} x stagger", pods - 1),
        vec![expected],
    )
    .target(
        Target::RatioAtMost(with_polls / expected),
        "the gate adds at most a peer poll per slot",
    )
    .note(format!(
        "swap on every volume -> the last pod's reload, from the proxies' statuses; \
         slots applied in order: {}; analysis key: {}",
        m.in_order,
        analysis.unwrap_or("unknown to this build")
    ))
    .emit();
    emit_load(&fleet, &m);
}

/// Publishes a benign change and samples the pods until every one runs it.
fn roll(fleet: &mut Fleet, analysis: Option<&str>) -> Measured {
    let pods = fleet.pods.len();
    let mut served: Vec<Served> = (0..pods).map(|_| Served::default()).collect();
    for (s, pod) in served.iter_mut().zip(&fleet.pods) {
        s.sample(&fleet.net, &pod.ns);
    }
    let cpu_before = cpu(fleet);
    let swapped = now_ms();
    let version = fleet.swap_all(&config_with(&broker(), 1, &cluster(1, analysis)));
    let started = Instant::now();
    let mut pending: Vec<usize> = (0..pods).collect();
    while !pending.is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "the rollout over {pods} pods did not finish in 240 s ({} left)",
            pending.len()
        );
        std::thread::sleep(Duration::from_millis(500));
        for (s, pod) in served.iter_mut().zip(&fleet.pods) {
            s.sample(&fleet.net, &pod.ns);
        }
        pending.retain(|i| !fleet.runs(*i, &version));
    }
    let cpu_after = cpu(fleet);
    let ends: Vec<(u128, u128)> = (0..pods).map(|i| window(&status(fleet, i))).collect();
    Measured {
        total_ms: ends.iter().map(|w| w.1).max().unwrap_or(swapped) - swapped,
        in_order: ends.windows(2).all(|w| w[0].1 <= w[1].0),
        served,
        cpu: (cpu_after.0 - cpu_before.0, cpu_after.1 - cpu_before.1),
    }
}

/// The status requests' figures: per pod per second, refused connections,
/// CPU per request.
fn emit_load(fleet: &Fleet, m: &Measured) {
    let pods = fleet.pods.len();
    let secs = m.total_ms as f64 / 1e3;
    let rates: Vec<f64> = m.served.iter().map(|s| s.total() as f64 / secs).collect();
    let requests: u64 = m.served.iter().map(Served::total).sum();
    let every = pods as f64 / POLL_S as f64;
    Row::new(
        "fleet",
        format!("status requests each pod served per second, {pods}-pod rollout"),
        "req/s",
        rates,
    )
    .baseline(
        format!("every one of {pods} watchers polling it each --peer-poll"),
        vec![every; pods],
    )
    .note(format!(
        "ss data_segs_in on each pod's admin connections (the driver's excluded), \
         over the rollout ({secs:.1} s): {requests} requests in all, {:.0}/s for the fleet",
        requests as f64 / secs
    ))
    .emit();
    let refused: f64 = (0..pods)
        .filter_map(|i| fleet.proxy_metric(i, "sluice_admin_connections_rejected_total"))
        .sum();
    Row::new(
        "fleet",
        format!("admin connections refused (64 per proxy at most), {pods}-pod rollout"),
        "connections",
        vec![refused],
    )
    .target(
        Target::AtMost(0.0),
        "0: every watcher keeps one connection to every pod",
    )
    .note("sluice_admin_connections_rejected_total summed over the proxies after the rollout")
    .emit();
    let per_request = |ticks: u64| ticks as f64 / TICKS / requests.max(1) as f64 * 1e6;
    Row::new(
        "fleet",
        format!("CPU per status request, {pods}-pod rollout: proxies serving"),
        "us",
        vec![per_request(m.cpu.0)],
    )
    .note("every proxy's utime + stime during the rollout (reloads included: an upper bound) / requests served")
    .emit();
    Row::new(
        "fleet",
        format!("CPU per status request, {pods}-pod rollout: watchers polling"),
        "us",
        vec![per_request(m.cpu.1)],
    )
    .note("every watcher's utime + stime during the rollout / requests made")
    .emit();
}
