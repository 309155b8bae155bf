//! Background measurements: resident memory and open file descriptors of
//! the proxy and the watcher (from `/proc`), and a probe that keeps opening
//! connections to the clusters' bootstrap ports and counts refusals.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

/// One reading of a process.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Usage {
    /// Resident set size (VmRSS), KiB.
    pub(crate) rss_kib: u64,
    /// Entries in `/proc/PID/fd`.
    pub(crate) fds: u64,
}

/// Reads `/proc/PID/status` and `/proc/PID/fd`; `None` once it is gone.
pub(crate) fn usage(pid: u32) -> Option<Usage> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some(Usage { rss_kib, fds })
}

/// What a process's descriptors point at, counted: `tcp LISTEN`, `tcp
/// ESTABLISHED port 9190 to port 41234` (local, then remote), `pipe`, `anon_inode:[eventpoll]`, paths.
pub(crate) fn descriptors(pid: u32) -> BTreeMap<String, u64> {
    // Socket inode → TCP state, from the process's own network namespace view.
    let mut tcp = BTreeMap::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let port = |i: usize| {
                f.get(i)
                    .and_then(|a| a.rsplit(':').next())
                    .and_then(|p| u16::from_str_radix(p, 16).ok())
                    .unwrap_or(0)
            };
            if let (Some(state), Some(inode)) = (f.get(3), f.get(9)) {
                let kind = match tcp_state(state) {
                    "LISTEN" => "LISTEN".to_owned(),
                    s => format!("{s} port {} to port {}", port(1), port(2)),
                };
                tcp.insert(format!("socket:[{inode}]"), kind);
            }
        }
    }
    let mut out = BTreeMap::new();
    let entries = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten();
    for entry in entries.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        let target = target.display().to_string();
        let kind = match tcp.get(&target) {
            Some(state) => format!("tcp {state}"),
            None if target.starts_with("pipe:") => "pipe".to_owned(),
            None if target.starts_with("socket:") => "socket (not TCP)".to_owned(),
            None => target,
        };
        *out.entry(kind).or_insert(0) += 1;
    }
    out
}

fn tcp_state(hex: &str) -> &'static str {
    match hex {
        "01" => "ESTABLISHED",
        "06" => "TIME_WAIT",
        "07" => "CLOSE",
        "08" => "CLOSE_WAIT",
        "0A" => "LISTEN",
        _ => "other",
    }
}

/// First, last and largest readings of one process, and a coarse series.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Track {
    /// The first reading.
    pub(crate) start: Usage,
    /// The last reading.
    pub(crate) end: Usage,
    /// The largest RSS and the largest FD count seen (not necessarily together).
    pub(crate) max: Usage,
    /// `[seconds since start, rss KiB, fds]` every ten seconds.
    pub(crate) series: Vec<(u64, u64, u64)>,
}

impl Track {
    fn record(&mut self, at: Duration, u: Usage) {
        if self.series.is_empty() {
            self.start = u;
        }
        if self.series.is_empty() || at.as_secs() >= self.series.last().map_or(0, |s| s.0) + 10 {
            self.series.push((at.as_secs(), u.rss_kib, u.fds));
        }
        self.end = u;
        self.max.rss_kib = self.max.rss_kib.max(u.rss_kib);
        self.max.fds = self.max.fds.max(u.fds);
    }
}

/// Runs `tick` every `period` on a thread until [`Ticker::stop`], which
/// returns what the thread built.
#[derive(Debug)]
pub(crate) struct Ticker<T> {
    stop: Sender<()>,
    thread: JoinHandle<T>,
}

impl<T: Send + 'static> Ticker<T> {
    fn start(period: Duration, mut state: T, tick: impl Fn(&mut T) + Send + 'static) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            loop {
                tick(&mut state);
                match stopped.recv_timeout(period) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => return state,
                }
            }
        });
        Ticker { stop, thread }
    }

    /// Stops the thread and returns its state.
    pub(crate) fn stop(self) -> T {
        let _ = self.stop.send(());
        self.thread.join().expect("monitor thread")
    }
}

/// Samples each `(name, pid)` every second.
pub(crate) fn sampler(pids: Vec<(&'static str, u32)>) -> Ticker<Vec<(&'static str, Track)>> {
    let started = Instant::now();
    let tracks = pids.iter().map(|(n, _)| (*n, Track::default())).collect();
    Ticker::start(Duration::from_secs(1), tracks, move |tracks| {
        for ((_, track), (_, pid)) in tracks.iter_mut().zip(&pids) {
            if let Some(u) = usage(*pid) {
                track.record(started.elapsed(), u);
            }
        }
    })
}

/// Connections the probe made to one port.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Probed {
    /// The cluster behind the port.
    pub(crate) cluster: &'static str,
    /// The port.
    pub(crate) port: u16,
    /// Connections accepted.
    pub(crate) opened: u64,
    /// Connections refused (nothing listening).
    pub(crate) refused: u64,
    /// Other connect errors (timeouts...).
    pub(crate) other_errors: u64,
}

/// Connects to each port every 20 ms and closes at once.
pub(crate) fn prober(targets: &[(&'static str, u16)]) -> Ticker<Vec<Probed>> {
    let probed = targets
        .iter()
        .map(|&(cluster, port)| Probed {
            cluster,
            port,
            ..Probed::default()
        })
        .collect();
    Ticker::start(Duration::from_millis(20), probed, |probed| {
        for p in probed.iter_mut() {
            let addr = SocketAddr::from(([127, 0, 0, 1], p.port));
            match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
                Ok(_) => p.opened += 1,
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => p.refused += 1,
                Err(_) => p.other_errors += 1,
            }
        }
    })
}
