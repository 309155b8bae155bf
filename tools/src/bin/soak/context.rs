//! Where the soak ran: the machine and the source measured.

use serde_json::{Value, json};

/// CPUs, memory, operating system and kernel.
pub(crate) fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mem_kib: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let os = read("/etc/os-release")
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .unwrap_or_default()
        .trim_matches('"')
        .to_owned();
    json!({
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "memory_gib": (mem_kib as f64 / 1024.0 / 1024.0 * 10.0).round() / 10.0,
        "os": os,
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        // The load averages (1, 5, 15 minutes) when the run ended: other
        // work on the machine competes with the soak for its CPUs.
        "load_at_end": read("/proc/loadavg").split_whitespace().take(3).collect::<Vec<_>>(),
    })
}

/// The commit measured, and product files changed on top of it.
pub(crate) fn source() -> Value {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(sluice_testkit::repo())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    let changed = git(&["status", "--porcelain", "--", "proxy", "watcher"]);
    json!({
        "commit": git(&["rev-parse", "HEAD"]),
        "uncommitted_product_changes": changed.lines().collect::<Vec<_>>(),
    })
}
