//! The soak itself: start the broker, the proxy, the watcher and the
//! clients; publish the plan's changes one at a time, each awaited by its
//! outcome and paced over the duration; then stop the clients and collect
//! what every party reports.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_testkit::ports::{port, ports};
use sluice_testkit::proxy::{Options, Proxy};
use sluice_testkit::volume::Volume;
use sluice_testkit::watcher::Watcher;
use sluice_tests::peers::Tansu;
use sluice_tests::python::Steady;

use crate::args::Args;
use crate::edges::{self, Disturbed, Sigterm};
use crate::metrics::Exposition;
use crate::monitor::{self, Probed, Track, Usage};
use crate::outcome::{self, Endpoints, Observed, Outcome, generations};
use crate::plan::{Expect, Kind, Plan, Ports, Step};

/// How long one change may take to show its outcome.
const OUTCOME_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the watcher retries a reload that fails (the bind conflict):
/// short, so each conflict costs seconds, not the default five minutes.
const RETRY_DEADLINE: &str = "2s";

/// One published change and how it ended.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// The change.
    pub(crate) step: Step,
    /// What the proxy and watcher showed.
    pub(crate) observed: Observed,
    /// The clusters afterwards are what the outcome implies: the new set
    /// when applied, the same names and generations otherwise.
    pub(crate) clusters_ok: bool,
    /// Ports a failed reload prepared were given back.
    pub(crate) ports_released: bool,
}

impl Record {
    /// The outcome the kind requires, with the clusters to match.
    pub(crate) fn as_expected(&self) -> bool {
        let expected = match self.step.kind.expect() {
            Expect::Applied => Outcome::Applied,
            Expect::Rejected => Outcome::Rejected,
            Expect::Failed => Outcome::Failed,
        };
        self.observed.outcome == expected && self.clusters_ok && self.ports_released
    }
}

/// Everything measured.
#[derive(Debug)]
pub(crate) struct Collected {
    /// From the first reload to the last outcome.
    pub(crate) reloading: Duration,
    /// Every published change.
    pub(crate) records: Vec<Record>,
    /// steady.py's reports: `unchanged`, then `modified`.
    pub(crate) clients: [Value; 2],
    /// The connection probe's counts.
    pub(crate) probes: Vec<Probed>,
    /// Proxy and watcher, sampled every second while the clients ran.
    pub(crate) tracks: Vec<(&'static str, Track)>,
    /// The proxy with no client connected: before the clients, after them.
    pub(crate) quiescent: (Usage, Usage),
    /// What the idle proxy's descriptors were, at those two moments.
    pub(crate) descriptors: [BTreeMap<String, u64>; 2],
    /// The proxy's and the watcher's metrics at the end.
    pub(crate) proxy_metrics: Exposition,
    /// The watcher's.
    pub(crate) watcher_metrics: Exposition,
    /// Connections to the unchanged cluster not made by the probe after its
    /// clients connected.
    pub(crate) unchanged_reconnections: f64,
    /// Each cluster's generation at the end.
    pub(crate) generations: BTreeMap<String, u64>,
    /// Warning and error lines per `level: message`, proxy then watcher.
    pub(crate) warnings: [BTreeMap<String, usize>; 2],
    /// The proxy's and the watcher's log lines, for the failing steps.
    pub(crate) logs: [Vec<String>; 2],
    /// tansu's address and the proxy's ports.
    pub(crate) endpoints: (String, Ports),
    /// Why the reloads stopped early, if they did.
    pub(crate) aborted: Option<String>,
    /// The SIGHUPs and concurrent reloads sent while the watcher reloaded.
    pub(crate) disturbed: Disturbed,
    /// The SIGTERM at the end, with a reload posted during the drain.
    pub(crate) sigterm: Sigterm,
}

/// The PIDs this run started, one `PID NAME` line each, so `scripts/soak`
/// can end them if this process is killed before it cleans up.
struct Pids(std::fs::File);

impl Pids {
    fn add(&mut self, name: &str, pid: u32) {
        let _ = writeln!(self.0, "{pid} {name}");
    }
}

/// Runs the soak.
pub(crate) fn run(args: &Args) -> Collected {
    std::fs::create_dir_all(&args.out).expect("create the output directory");
    let mut pids = Pids(std::fs::File::create(args.out.join("pids")).expect("pids file"));
    let tansu = start_broker(&mut pids);
    let p = Ports {
        admin: port(),
        unchanged: ports(2),
        modified: ports(4),
        extra: ports(2),
        occupied: ports(2),
    };
    let _held = TcpListener::bind(("127.0.0.1", p.occupied)).expect("hold the occupied port");
    let mut plan = Plan::new(&tansu.addr, p);
    let base = plan.base();
    let dir = tempfile::tempdir().expect("dir");
    let mut volume = Volume::create(dir.path(), "proxy.yaml", base.as_bytes());
    let (mut proxy, mut watcher) = launch(&base, p, &volume, &mut pids);
    let ends = Endpoints {
        admin: proxy.admin.clone(),
        watcher: watcher.http.clone(),
    };
    let quiet_start = monitor::usage(proxy.pid()).unwrap_or_default();
    let fds_start = monitor::descriptors(proxy.pid());
    let clients = start_clients(p, &mut pids);
    let unchanged_total = "sluice_connections_total";
    let unchanged_label = [("cluster", "unchanged")];
    let connected = scrape(&ends.admin).sum(unchanged_total, &unchanged_label);
    let sampler = monitor::sampler(vec![
        ("sluice-proxy", proxy.pid()),
        ("sluice-watcher", watcher.process().pid()),
    ]);
    let prober = monitor::prober(&[("unchanged", p.unchanged), ("modified", p.modified)]);

    let disturbances = edges::start(&ends.admin, proxy.pid());
    let (records, aborted, reloading) = reload(
        args,
        &mut plan,
        &mut volume,
        &ends,
        p,
        &mut proxy,
        &mut watcher,
    );
    let disturbed = disturbances.stop(&proxy);
    settle(&ends.admin, false);
    let probes = prober.stop();
    let tracks = sampler.stop();
    let metrics = scrape(&ends.admin);
    let probed_unchanged = probes[0].opened as f64;
    let unchanged_reconnections =
        metrics.sum(unchanged_total, &unchanged_label) - connected - probed_unchanged;
    let clients = finish_clients(clients);
    settle(&ends.admin, true);
    let quiet_end = monitor::usage(proxy.pid()).unwrap_or_default();
    let fds_end = monitor::descriptors(proxy.pid());
    let mut collected = Collected {
        reloading,
        records,
        clients,
        probes,
        tracks,
        quiescent: (quiet_start, quiet_end),
        descriptors: [fds_start, fds_end],
        proxy_metrics: scrape(&ends.admin),
        watcher_metrics: Exposition::scrape(&ends.watcher).unwrap_or_default(),
        unchanged_reconnections,
        generations: generations(&ends.admin).unwrap_or_default().0,
        warnings: [warnings(&proxy.logs()), warnings(&watcher.logs())],
        logs: [proxy.logs(), watcher.logs()],
        endpoints: (tansu.addr.clone(), p),
        aborted,
        disturbed,
        sigterm: Sigterm::default(),
    };
    collected.sigterm = edges::sigterm(&mut proxy, p.unchanged);
    save_logs(args, &proxy, &watcher, &ends);
    collected
}

/// Starts tansu, the broker, with the two clusters' topics.
fn start_broker(pids: &mut Pids) -> Tansu {
    let tansu = Tansu::start();
    pids.add("tansu", tansu.pid());
    tansu.create_topic("unchanged", 3);
    tansu.create_topic("modified", 3);
    tansu
}

/// Starts the proxy (with `--persist`: the file a SIGHUP reads holds what
/// the watcher applied) and the watcher that reloads it.
fn launch(base: &str, p: Ports, volume: &Volume, pids: &mut Pids) -> (Proxy, Watcher) {
    let options = Options {
        admin_port: Some(p.admin),
        args: vec!["--persist".into()],
        ..Options::default()
    };
    let proxy = Proxy::launch(tempfile::tempdir().expect("dir"), base, &options);
    pids.add("sluice-proxy", proxy.pid());
    let mut watcher = Watcher::start(
        &volume.path(),
        &proxy.admin,
        &[
            "--stagger",
            "0s",
            "--jitter",
            "0s",
            "--retry-deadline",
            RETRY_DEADLINE,
        ],
    );
    pids.add("sluice-watcher", watcher.process().pid());
    (proxy, watcher)
}

/// Starts steady.py against both clusters: `unchanged`, then `modified`.
fn start_clients(p: Ports, pids: &mut Pids) -> [Steady; 2] {
    let bootstrap = |port: u16| format!("127.0.0.1:{port}");
    let clients = std::thread::scope(|s| {
        let u = s.spawn(|| Steady::start(&bootstrap(p.unchanged), "unchanged", "u-group", true));
        let m = s.spawn(|| Steady::start(&bootstrap(p.modified), "modified", "m-group", true));
        [u.join(), m.join()].map(|c| c.unwrap_or_else(|e| std::panic::resume_unwind(e)))
    });
    for c in &clients {
        pids.add("steady.py", c.pid());
    }
    clients
}

/// Stops steady.py on both clusters: their reports.
fn finish_clients(clients: [Steady; 2]) -> [Value; 2] {
    std::thread::scope(|s| {
        clients
            .map(|c| s.spawn(move || c.finish()))
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    })
}

/// Publishes the plan's changes, paced over the duration, until enough
/// were published for long enough (or the run must stop): every record,
/// why it stopped early if it did, and how long it took.
fn reload(
    args: &Args,
    plan: &mut Plan,
    volume: &mut Volume,
    ends: &Endpoints,
    p: Ports,
    proxy: &mut Proxy,
    watcher: &mut Watcher,
) -> (Vec<Record>, Option<String>, Duration) {
    let started = Instant::now();
    let mut records = Vec::new();
    let mut aborted = None;
    let mut timeouts = 0;
    while records.len() < args.reloads as usize || started.elapsed() < args.duration {
        if let Some(why) = gone(proxy, watcher) {
            aborted = Some(why);
            break;
        }
        let record = execute(plan.next(), volume, ends, p);
        timeouts = match record.observed.outcome {
            Outcome::TimedOut => timeouts + 1,
            _ => 0,
        };
        records.push(record);
        if timeouts >= 3 {
            aborted = Some("three changes in a row showed no outcome".into());
            break;
        }
        // Pace the reloads evenly over the duration.
        let due = args
            .duration
            .mul_f64(records.len() as f64 / f64::from(args.reloads));
        if let Some(rest) = due.checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    if aborted.is_none()
        && let Some(step) = plan.restore()
    {
        records.push(execute(step, volume, ends, p));
    }
    (records, aborted, started.elapsed())
}

/// Keeps the processes' logs and last metrics in the output directory.
fn save_logs(args: &Args, proxy: &Proxy, watcher: &Watcher, ends: &Endpoints) {
    let _ = std::fs::write(args.out.join("proxy.log"), proxy.logs().join("\n"));
    let _ = std::fs::write(args.out.join("watcher.log"), watcher.logs().join("\n"));
    for (name, addr) in [("proxy", &ends.admin), ("watcher", &ends.watcher)] {
        if let Ok(r) = sluice_testkit::http::request(addr, "GET", "/metrics", &[], b"") {
            let _ = std::fs::write(args.out.join(format!("{name}-metrics.txt")), r.body);
        }
    }
}

/// Publishes one change and checks the clusters against its outcome.
fn execute(step: Step, volume: &mut Volume, ends: &Endpoints, p: Ports) -> Record {
    let before = generations(&ends.admin).map(|g| g.0);
    let observed = outcome::publish(volume, ends, &step.text, OUTCOME_TIMEOUT);
    let after = generations(&ends.admin).map(|g| g.0);
    let clusters_ok = match (observed.outcome, after) {
        (Outcome::Applied, Some(after)) => {
            let mut wanted = step.clusters.clone();
            wanted.sort_unstable();
            after.keys().map(String::as_str).eq(wanted)
        }
        (_, after) => after.is_some() && after == before,
    };
    // The bind conflict's second port (its broker port) may have been bound
    // before the first failed: it must be free again.
    let ports_released = step.kind != Kind::ConflictOccupiedPort
        || poll(Duration::from_secs(2), || {
            TcpListener::bind(("127.0.0.1", p.occupied + 1)).is_ok()
        });
    Record {
        step,
        observed,
        clusters_ok,
        ports_released,
    }
}

/// Why the reloads cannot go on: the proxy or the watcher exited.
fn gone(proxy: &mut Proxy, watcher: &mut Watcher) -> Option<String> {
    let exited = |name: &str, status: Option<std::process::ExitStatus>| {
        status.map(|s| format!("{name} exited ({s})"))
    };
    exited("sluice-proxy", proxy.process().wait_exit(Duration::ZERO)).or_else(|| {
        exited(
            "sluice-watcher",
            watcher.process().wait_exit(Duration::ZERO),
        )
    })
}

/// Waits (bounded) until no generation drains and, when `idle`, no client
/// connection is open.
fn settle(admin: &str, idle: bool) {
    poll(Duration::from_secs(30), || {
        let drained = generations(admin).is_some_and(|g| g.1 == 0);
        let active = scrape(admin).sum("sluice_connections_active", &[]);
        drained && (!idle || active == 0.0)
    });
}

/// Polls `done` every 20 ms until it holds or `limit` passes.
fn poll(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn scrape(admin: &str) -> Exposition {
    Exposition::scrape(admin).unwrap_or_default()
}

/// WARN and ERROR log lines counted per `LEVEL: message`.
fn warnings(lines: &[String]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for line in lines {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let level = v["level"].as_str().unwrap_or_default();
        if level == "WARN" || level == "ERROR" {
            let message = v["message"]
                .as_str()
                .or_else(|| v["fields"]["message"].as_str())
                .unwrap_or_default();
            *out.entry(format!("{level}: {message}")).or_insert(0) += 1;
        }
    }
    out
}
