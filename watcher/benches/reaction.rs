//! The watcher's reaction time and footprint.
//!
//! Reaction: from kubelet's rename of `..data` to the first request reaching
//! the proxy's admin port, over 200 swaps, with no stagger. The "proxy" here
//! is a small listener in this process that stamps each request's arrival
//! and answers validate with 400 (so each swap is one round); the baseline is
//! the same rename observed directly through inotify (notify) in this process.
//! Footprint: the release binary's RSS and CPU while idle, against `sleep`'s.
//!
//! Run: `cargo bench -p sluice-watcher --bench reaction` (or `scripts/bench`,
//! which gathers the `BENCH` lines into its table).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher as _};
use sluice_admin_api::{ConfigProblem, ConfigStatus, ValidateAnswer, endpoints};
use sluice_testkit::volume::Volume;

const SWAPS: usize = 200;

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The fake proxy's status: it runs no configuration the watcher has.
fn status_answer() -> ConfigStatus {
    let none = format!("sha256:{}", "0".repeat(64));
    let json = format!(
        r#"{{"currentConfigVersion": "{none}", "effectiveVersion": "{none}",
            "appliedAt": "2025-01-01T00:00:00.000Z", "instance": "bench", "ready": true,
            "lastReloadAttempt": null, "lastValidationAttempt": null,
            "reloadInProgressSince": null}}"#
    );
    serde_json::from_str(&json).expect("a status answer")
}

/// The fake proxy finds every configuration invalid, so each swap is one
/// round (status, validate) and no reload.
fn invalid_answer() -> ValidateAnswer {
    let problem = ConfigProblem {
        line: Some(1),
        column: Some(1),
        path: String::new(),
        message: "bench".to_owned(),
    };
    let version: sluice_admin_api::ConfigVersion = format!("sha256:{}", "b".repeat(64))
        .parse()
        .expect("a version");
    ValidateAnswer::invalid(
        version.clone(),
        vec![problem],
        Vec::new(),
        version.as_str().parse().expect("a version"),
    )
}

/// A listener that sends the arrival time of every status request.
fn fake_admin() -> (String, mpsc::Receiver<Instant>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let arrived = Instant::now();
                    let mut len = 0;
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    let _ = reader.read_exact(&mut body);
                    let (status, json) = if line.starts_with(&format!("GET {}", endpoints::STATUS))
                    {
                        let _ = tx.send(arrived);
                        ("200 OK", serde_json::to_vec(&status_answer()))
                    } else {
                        ("400 Bad Request", serde_json::to_vec(&invalid_answer()))
                    };
                    let json = json.expect("answers are JSON");
                    let head = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        json.len()
                    );
                    if stream.write_all(head.as_bytes()).is_err()
                        || stream.write_all(&json).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (addr, rx)
}

/// A `kB` field of `/proc/PID/status` (`VmRSS:`, `RssAnon:`, `RssFile:`).
fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// CPU time of all the process's threads, in nanoseconds (schedstat).
fn cpu_ns(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// One figure as a `BENCH` line for `scripts/bench`.
fn emit(
    case: &str,
    unit: &str,
    (median, lo, hi): (f64, f64, f64),
    baseline: Option<(&str, f64)>,
    max: Option<f64>,
) {
    let mut record = serde_json::json!({
        "section": "watcher", "case": case, "unit": unit,
        "median": median, "lo": lo, "hi": hi, "spread": "min-max",
    });
    if let Some((name, b)) = baseline {
        record["baseline"] = name.into();
        record["baseline_median"] = b.into();
        record["ratio"] = (median / b).into();
    }
    if let Some(max) = max {
        record["target"] =
            serde_json::json!({"of": "median", "max": max, "text": format!("<= {max} {unit}")});
    }
    println!("BENCH {record}");
}

/// Each swap's time until inotify itself reports the `..data` rename.
fn baseline(dir: &std::path::Path, volume: &mut Volume) -> Vec<Duration> {
    let (etx, erx) = mpsc::channel();
    let mut raw = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        if let Ok(e) = e
            && e.paths.iter().any(|p| p.ends_with("..data"))
        {
            let _ = etx.send(Instant::now());
        }
    })
    .expect("notify");
    raw.watch(dir, RecursiveMode::NonRecursive).expect("watch");
    let mut baseline = Vec::new();
    for i in 0..SWAPS {
        while erx.try_recv().is_ok() {}
        let t = Instant::now();
        volume.swap(format!("n: b{i}\n").as_bytes());
        let seen = erx
            .recv_timeout(Duration::from_secs(5))
            .expect("inotify event");
        baseline.push(seen - t);
    }
    baseline
}

/// The real watcher on `volume`, calling the fake admin API at `admin`.
fn start_watcher(volume: &Volume, admin: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_sluice-watcher"))
        .arg("--path")
        .arg(volume.path())
        .args([
            "--proxy",
            &format!("http://{admin}"),
            "--stagger",
            "0s",
            "--jitter",
            "0s",
        ])
        .args(["--metrics-listen", "127.0.0.1:0", "--log-format", "json"])
        .env("SLUICE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sluice-watcher")
}

/// Each swap's time until the watcher's first request arrives.
fn reactions(volume: &mut Volume, arrivals: &mpsc::Receiver<Instant>) -> Vec<Duration> {
    let mut reaction = Vec::new();
    for i in 0..SWAPS {
        while arrivals.try_recv().is_ok() {}
        let t = Instant::now();
        volume.swap(format!("n: w{i}\n").as_bytes());
        let arrived = arrivals
            .recv_timeout(Duration::from_secs(5))
            .expect("a request after the swap");
        reaction.push(arrived - t);
        // Let the round finish (validate is answered 400) before the next swap.
        std::thread::sleep(Duration::from_millis(20));
    }
    reaction
}

/// What an idle watcher holds and spends, beside `sleep`'s RSS.
struct Idle {
    cpu_ms_per_s: f64,
    rss: u64,
    anon: u64,
    file: u64,
    sleep_rss: u64,
}

fn idle(pid: u32) -> Idle {
    std::thread::sleep(Duration::from_secs(2));
    let (cpu0, idle) = (cpu_ns(pid), Duration::from_secs(5));
    std::thread::sleep(idle);
    let cpu_ms_per_s = (cpu_ns(pid) - cpu0) as f64 / 1e6 / idle.as_secs_f64();
    let mut sleeper = Command::new("sleep").arg("30").spawn().expect("sleep");
    std::thread::sleep(Duration::from_millis(200));
    let sleep_rss = status_kb(sleeper.id(), "VmRSS:");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    Idle {
        cpu_ms_per_s,
        rss: status_kb(pid, "VmRSS:"),
        anon: status_kb(pid, "RssAnon:"),
        file: status_kb(pid, "RssFile:"),
        sleep_rss,
    }
}

fn main() {
    let dir = tempfile::tempdir().expect("dir");
    let mut volume = Volume::create(dir.path(), "proxy.yaml", b"n: 0\n");
    let mut baseline = baseline(dir.path(), &mut volume);
    let (admin, arrivals) = fake_admin();
    let mut watcher = start_watcher(&volume, &admin);
    // Its startup reconcile is the first request.
    arrivals
        .recv_timeout(Duration::from_secs(10))
        .expect("startup reconcile");
    let mut reaction = reactions(&mut volume, &arrivals);
    let idle = idle(watcher.id());
    let _ = watcher.kill();
    let _ = watcher.wait();
    print_table(&mut baseline, &mut reaction, &idle);
    emit_figures(&mut baseline, &mut reaction, &idle);
}

fn mb(kb: u64) -> f64 {
    kb as f64 * 1024.0 / 1e6
}

fn print_table(baseline: &mut [Duration], reaction: &mut [Duration], idle: &Idle) {
    let (b50, b99) = (percentile(baseline, 0.5), percentile(baseline, 0.99));
    let (r50, r99) = (percentile(reaction, 0.5), percentile(reaction, 0.99));
    println!("{:<58} {:>9} {:>9}", "case", "p50", "p99");
    println!(
        "{:<58} {:>6.2} ms {:>6.2} ms",
        "inotify event after the ..data rename (baseline)",
        ms(b50),
        ms(b99)
    );
    println!(
        "{:<58} {:>6.2} ms {:>6.2} ms   ({:.1}x / {:.1}x baseline)",
        "sluice-watcher: rename to first request at the proxy",
        ms(r50),
        ms(r99),
        r50.as_secs_f64() / b50.as_secs_f64(),
        r99.as_secs_f64() / b99.as_secs_f64()
    );
    println!(
        "idle RSS: sluice-watcher {:.1} MB ({:.1} MB anonymous, {:.1} MB file-backed), `sleep` {:.1} MB ({:.1}x); idle CPU: {:.3} ms per s",
        mb(idle.rss),
        mb(idle.anon),
        mb(idle.file),
        mb(idle.sleep_rss),
        idle.rss as f64 / idle.sleep_rss.max(1) as f64,
        idle.cpu_ms_per_s,
    );
}

fn emit_figures(baseline: &mut [Duration], reaction: &mut [Duration], idle: &Idle) {
    let (rmin, rmax) = (ms(reaction[0]), ms(reaction[SWAPS - 1]));
    let (b50, b99) = (percentile(baseline, 0.5), percentile(baseline, 0.99));
    let (r50, r99) = (percentile(reaction, 0.5), percentile(reaction, 0.99));
    let swaps = format!("{SWAPS} swaps, no stagger");
    let inotify = "inotify event, in process";
    emit(
        &format!("reaction p50, rename to first request ({swaps})"),
        "ms",
        (ms(r50), rmin, rmax),
        Some((inotify, ms(b50))),
        None,
    );
    emit(
        &format!("reaction p99, rename to first request ({swaps})"),
        "ms",
        (ms(r99), rmin, rmax),
        Some((inotify, ms(b99))),
        Some(5.0),
    );
    let one = |v: f64| (v, v, v);
    emit(
        "idle RSS",
        "MB",
        one(mb(idle.rss)),
        Some(("`sleep` RSS", mb(idle.sleep_rss))),
        Some(4.0),
    );
    emit(
        "idle RSS, anonymous (heap, stacks)",
        "MB",
        one(mb(idle.anon)),
        None,
        None,
    );
    emit(
        "idle RSS, file-backed (binary and libc pages)",
        "MB",
        one(mb(idle.file)),
        None,
        None,
    );
    emit("idle CPU", "ms/s", one(idle.cpu_ms_per_s), None, None);
}
