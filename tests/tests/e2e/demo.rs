//! The demos leave nothing behind: every process `scripts/demo` and
//! `scripts/demo --fleet` start ends with them (issue 31: the fleet demo left
//! its broker, three proxies and three watchers running in deleted network
//! namespaces).
//!
//! Each run carries a marker of its own in its environment
//! (`SLUICE_DEMO_MARK`), which every process it starts inherits; after the
//! demo exits, no process on the machine may carry it. Other tests running
//! in parallel start `sluice-proxy` too, so processes are told apart by the
//! marker, never by name. The demos run on the binaries the test command
//! built (`SLUICE_BIN`), skipping their own install and release build.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use sluice_testkit::ports::ports;
use sluice_testkit::{bin, repo};

/// The processes whose environment holds `SLUICE_DEMO_MARK=<mark>`, with
/// their names.
fn marked(mark: &str) -> Vec<(u32, String)> {
    let needle = format!("SLUICE_DEMO_MARK={mark}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == needle.as_bytes()))
        })
        .map(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            (pid, comm.trim().to_owned())
        })
        .collect()
}

/// Runs `scripts/demo <args>` to its end and returns what it left running
/// (ended here, so a failure leaves nothing either).
fn leftovers_of(args: &[&str]) -> Vec<(u32, String)> {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mark = format!("{}-{nanos}", std::process::id());
    let proxy = bin("sluice-proxy");
    let bins = proxy.parent().unwrap_or(Path::new("."));
    // The local demo's two clusters listen on 127.0.0.1: on ports reserved
    // here, so no test running beside it takes them.
    let (orders, payments) = (ports(2), ports(2));
    let out = Command::new("bash")
        .arg(repo().join("scripts/demo"))
        .args(args)
        .env("SLUICE_BIN", bins)
        .env("SLUICE_DEMO_ORDERS_PORT", orders.to_string())
        .env("SLUICE_DEMO_PAYMENTS_PORT", payments.to_string())
        .env("SLUICE_DEMO_MARK", &mark)
        .output()
        .expect("run scripts/demo");
    // A process the demo killed may take a moment to exit; one it left
    // behind stays.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = marked(&mark);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        left = marked(&mark);
    }
    for (pid, _) in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(
        out.status.success(),
        "scripts/demo {args:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    left
}

#[test]
fn the_fleet_demo_leaves_no_process_behind() {
    let left = leftovers_of(&["--fleet"]);
    assert!(
        left.is_empty(),
        "scripts/demo --fleet left {} processes running: {left:?}",
        left.len()
    );
}

#[test]
fn the_demo_leaves_no_process_behind() {
    let left = leftovers_of(&[]);
    assert!(
        left.is_empty(),
        "scripts/demo left {} processes running: {left:?}",
        left.len()
    );
}
