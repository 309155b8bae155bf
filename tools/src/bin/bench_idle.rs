//! What an idle watcher costs: CPU ticks (utime + stime of
//! `/proc/<pid>/stat`) per minute of one `sluice-watcher` while nothing
//! changes, on a plain file and on a kubelet-style `..data` volume, against
//! the idle proxy it serves measured over the same windows (issue 31: on a
//! plain file the watcher woke on its own reads, about 1.7% of a core).
//!
//! As root, also the ten idle watchers of a gated fleet together (ten pods
//! in network namespaces, `sluice_tests::fleet`), against their ten
//! proxies: peers poll each other, which an idle fleet still pays for.
//!
//! usage: bench_idle [--secs N]   (BENCH lines on stdout, text on stderr;
//! N seconds of measurement per case, in 4 windows; default 20)

use std::time::Duration;

use sluice_testkit::config;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_testkit::rig::{AT_ONCE, Rig};
use sluice_testkit::watcher::Watcher;
use sluice_tests::fleet::{Fleet, Spec};
use sluice_tools::record::{Row, Target};

/// Windows per case: the repetitions of a figure.
const WINDOWS: u32 = 4;

/// The fleet case's pods, as issue 31 asks.
const PODS: usize = 10;

/// 0.1% of a core in ticks per minute, at Linux's 100 ticks a second.
const TENTH_OF_A_PERCENT: f64 = 0.001 * 100.0 * 60.0;

fn main() {
    let secs = std::env::args()
        .skip_while(|a| a != "--secs")
        .nth(1)
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| *n >= u64::from(WINDOWS))
        .unwrap_or(20);
    let window = Duration::from_secs(secs) / WINDOWS;

    let (plain, proxy) = plain_file(window);
    emit("one watcher on a plain file, idle", plain, proxy, window);

    let mut rig = Rig::start(&AT_ONCE);
    let pids = (rig.watcher.process().pid(), rig.proxy.pid());
    let (volume, proxy) = idle_ticks(pids, window);
    emit(
        "one watcher on a ..data volume, idle",
        volume,
        proxy,
        window,
    );
    drop(rig);

    if is_root() {
        let (watchers, proxies) = fleet(window);
        Row::new(
            "idle",
            format!("{PODS} watchers of a gated fleet, idle, together"),
            "ticks/min",
            watchers,
        )
        .baseline(format!("their {PODS} idle proxies"), proxies)
        .target(
            Target::AtMost(TENTH_OF_A_PERCENT),
            "10 idle watchers together under 0.1% of a core",
        )
        .note(format!(
            "{PODS} pods in network namespaces, --peers, stagger 0; utime + stime summed"
        ))
        .emit();
    } else {
        eprintln!("the fleet case is skipped: it makes network namespaces, which needs root");
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|v| v.split_whitespace().nth(1))
            == Some("0")
    })
}

/// The summed ticks per minute of a gated fleet's watchers and proxies.
fn fleet(window: Duration) -> (Vec<f64>, Vec<f64>) {
    let fleet = Fleet::launch(Spec {
        pods: PODS,
        ..Spec::new(&AT_ONCE)
    });
    let pids: Vec<(u32, u32)> = fleet
        .pods
        .iter()
        .filter_map(|pod| Some((pod.watcher.as_ref()?.pid(), pod.proxy.pid())))
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let per_minute = 60.0 / window.as_secs_f64();
    let sum = |pick: fn(&(u32, u32)) -> u32| pids.iter().map(|p| ticks(pick(p))).sum::<u64>();
    let (mut w, mut p) = (Vec::new(), Vec::new());
    for _ in 0..WINDOWS {
        let (w0, p0) = (sum(|p| p.0), sum(|p| p.1));
        std::thread::sleep(window);
        w.push((sum(|p| p.0) - w0) as f64 * per_minute);
        p.push((sum(|p| p.1) - p0) as f64 * per_minute);
    }
    (w, p)
}

/// A proxy, its configuration as a plain file, a watcher on it: the
/// watcher's and the proxy's ticks per minute in each window.
fn plain_file(window: Duration) -> (Vec<f64>, Vec<f64>) {
    let port = ports(2);
    let proxy = Proxy::start(&config::watched("{admin}", port, 0));
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("proxy.yaml");
    let text = proxy.render(&config::watched("{admin}", port, 0));
    std::fs::write(&file, text).expect("write the configuration");
    let mut watcher = Watcher::start(&file, &proxy.admin, &AT_ONCE);
    let pids = (watcher.process().pid(), proxy.pid());
    idle_ticks(pids, window)
}

/// Ticks per minute of `(watcher, proxy)` in each of [`WINDOWS`] windows,
/// after both settled from their start.
fn idle_ticks((watcher, proxy): (u32, u32), window: Duration) -> (Vec<f64>, Vec<f64>) {
    std::thread::sleep(Duration::from_secs(2));
    let per_minute = 60.0 / window.as_secs_f64();
    let (mut w, mut p) = (Vec::new(), Vec::new());
    for _ in 0..WINDOWS {
        let (w0, p0) = (ticks(watcher), ticks(proxy));
        std::thread::sleep(window);
        w.push((ticks(watcher) - w0) as f64 * per_minute);
        p.push((ticks(proxy) - p0) as f64 * per_minute);
    }
    (w, p)
}

/// utime + stime of a process, in clock ticks (`/proc/<pid>/stat`, fields
/// 14 and 15, counted after the command name's closing parenthesis).
fn ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    // After the name: state is field 3, so utime (14) and stime (15) are 11 and 12 here.
    field(11).unwrap_or(0) + field(12).unwrap_or(0)
}

fn emit(case: &str, watcher: Vec<f64>, proxy: Vec<f64>, window: Duration) {
    Row::new("idle", case, "ticks/min", watcher)
        .baseline("the idle proxy it serves", proxy)
        .target(Target::AtMost(0.0), "0 ticks per minute when nothing changes")
        .note(format!(
            "utime + stime from /proc/<pid>/stat over {WINDOWS} windows of {window:?}, scaled to a minute"
        ))
        .emit();
}
