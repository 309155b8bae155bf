//! The reload path's edges under the soak: SIGHUPs (the proxy runs with
//! `--persist`, so its file holds what the watcher applied) and concurrent
//! reloads of the configuration in force (with `If-Match`) while the
//! watcher reloads; at the end, a SIGTERM with a reload posted during the
//! drain.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;
use sluice_admin_api::endpoints;
use sluice_testkit::config::version;
use sluice_testkit::http::{request, wait_for_status};
use sluice_testkit::proxy::Proxy;

/// How often a SIGHUP is sent.
const SIGHUP_EVERY: Duration = Duration::from_secs(3);
/// How often the configuration in force is posted again.
const CONCURRENT_EVERY: Duration = Duration::from_millis(500);

/// What the disturbances saw.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Disturbed {
    /// SIGHUPs sent.
    pub(crate) sighups_sent: u64,
    /// SIGHUPs the proxy logged handling.
    pub(crate) sighups_handled: u64,
    /// Of those, how many waited for another reload to end first.
    pub(crate) sighups_waited: u64,
    /// Concurrent reloads by HTTP status (200 unchanged, 409 busy, 412
    /// when the version moved between reading and posting).
    pub(crate) concurrent: BTreeMap<u16, u64>,
    /// Concurrent reloads that changed something: each would be a revert.
    pub(crate) concurrent_changed: u64,
}

/// The disturbances, running.
pub(crate) struct Disturbances {
    stop: Arc<AtomicBool>,
    sighups: JoinHandle<u64>,
    concurrent: JoinHandle<(BTreeMap<u16, u64>, u64)>,
}

/// Starts both disturbances against the proxy at `admin` with PID `pid`.
pub(crate) fn start(admin: &str, pid: u32) -> Disturbances {
    let stop = Arc::new(AtomicBool::new(false));
    let until = Arc::clone(&stop);
    let sighups = std::thread::spawn(move || {
        let mut sent = 0;
        while pause(&until, SIGHUP_EVERY) {
            let hup = std::process::Command::new("kill")
                .args(["-HUP", &pid.to_string()])
                .status();
            if hup.is_ok_and(|s| s.success()) {
                sent += 1;
            }
        }
        sent
    });
    let until = Arc::clone(&stop);
    let admin = admin.to_owned();
    let concurrent = std::thread::spawn(move || {
        let mut statuses = BTreeMap::new();
        let mut changed = 0;
        while pause(&until, CONCURRENT_EVERY) {
            let Ok(in_force) = request(&admin, "GET", endpoints::CONFIG, &[], b"") else {
                continue;
            };
            let tag = version(&in_force.body);
            let headers = [(endpoints::IF_MATCH, tag.as_str())];
            let Ok(answer) = request(
                &admin,
                "POST",
                endpoints::RELOAD,
                &headers,
                in_force.body.as_bytes(),
            ) else {
                continue;
            };
            *statuses.entry(answer.status).or_insert(0) += 1;
            if answer.status == 200 && answer.body.contains("\"changed\":true") {
                changed += 1;
            }
        }
        (statuses, changed)
    });
    Disturbances {
        stop,
        sighups,
        concurrent,
    }
}

/// Sleeps `period` unless stopped; whether to go on.
fn pause(stop: &AtomicBool, period: Duration) -> bool {
    let end = Instant::now() + period;
    while Instant::now() < end {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !stop.load(Ordering::Relaxed)
}

impl Disturbances {
    /// Stops both; counts what the proxy logged of the SIGHUPs once the
    /// last one had time to be handled.
    pub(crate) fn stop(self, proxy: &Proxy) -> Disturbed {
        self.stop.store(true, Ordering::Relaxed);
        let sighups_sent = self.sighups.join().unwrap_or(0);
        let (concurrent, concurrent_changed) = self.concurrent.join().unwrap_or_default();
        let count =
            |needle: &str| proxy.logs().iter().filter(|l| l.contains(needle)).count() as u64;
        let handled = "SIGHUP: reloading the configuration file";
        let deadline = Instant::now() + Duration::from_secs(10);
        while count(handled) < sighups_sent && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        Disturbed {
            sighups_sent,
            sighups_handled: count(handled),
            sighups_waited: count("SIGHUP: another reload is running"),
            concurrent,
            concurrent_changed,
        }
    }
}

/// How the SIGTERM at the end went.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Sigterm {
    /// The status of a reload posted during the drain (503 expected).
    pub(crate) reload_status: u16,
    /// Whether a cluster's port refused connections during the drain.
    pub(crate) port_refused: bool,
    /// The proxy's exit code, if it exited.
    pub(crate) exit_code: Option<i32>,
    /// From the last connection's end to the exit, in seconds.
    pub(crate) exit_after_s: f64,
}

/// SIGTERM while a connection holds the drain open (half a frame sent to
/// `port`), then a reload of the configuration in force plus a change,
/// then the connection ends and the proxy should exit.
pub(crate) fn sigterm(proxy: &mut Proxy, port: u16) -> Sigterm {
    let mut out = Sigterm::default();
    let Ok(mut held) = TcpStream::connect(("127.0.0.1", port)) else {
        return out;
    };
    // The first bytes of a 24-byte ApiVersions request: mid-frame.
    let _ = held.write_all(&[0, 0, 0, 24, 0, 18]);
    let admin = proxy.admin.clone();
    let in_force = request(&admin, "GET", endpoints::CONFIG, &[], b"")
        .map(|r| r.body)
        .unwrap_or_default();
    // A drain long enough that the reload below always finds the proxy
    // draining, however loaded the machine: the held connection ends it.
    let long_drain = in_force.replacen("drainTimeout: ", "drainTimeout: 60s\n# was: ", 1);
    let _ = request(
        &admin,
        "POST",
        endpoints::RELOAD,
        &[],
        long_drain.as_bytes(),
    );
    proxy.process().signal("TERM");
    wait_for_status(&admin, endpoints::READY, 503, Duration::from_secs(10));
    let changed = format!("{in_force}\n# posted during the drain\n");
    out.reload_status =
        request(&admin, "POST", endpoints::RELOAD, &[], changed.as_bytes()).map_or(0, |r| r.status);
    out.port_refused = TcpStream::connect(("127.0.0.1", port)).is_err();
    drop(held);
    let closed = Instant::now();
    let exit = proxy.process().wait_exit(Duration::from_secs(60));
    out.exit_code = exit.and_then(|s| s.code());
    out.exit_after_s = closed.elapsed().as_secs_f64();
    out
}
