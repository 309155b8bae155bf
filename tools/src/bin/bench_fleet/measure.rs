//! What the fleet cases measure besides time: the status requests each
//! pod's admin API serves (the kernel's count of data segments received on
//! each of its established admin connections, `ss -ti`'s `data_segs_in`:
//! one per status request, whose head is one small write), the CPU its
//! proxy spends, and whether this build knows the `analysis` key.

use std::collections::BTreeMap;

use sluice_testkit::netns::{HUB, Net};
use sluice_tests::fleet::{ADMIN, Cluster, broker, config_with};

/// Whether this build's `sluice-proxy check` accepts a cluster's
/// `analysis` block (the client-side analysis, issue 27).
pub(crate) fn analysis_supported() -> bool {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("proxy.yaml");
    let off = Cluster {
        analysis: Some("{ enabled: false }".to_owned()),
        ..Cluster::default()
    };
    std::fs::write(&path, config_with(&broker(), 0, &off)).expect("write");
    std::process::Command::new(sluice_testkit::bin("sluice-proxy"))
        .args(["check", "--paths-only"])
        .arg(&path)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// utime + stime of a process, in clock ticks (`/proc/<pid>/stat`).
pub(crate) fn ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are 11 and 12 here.
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(11) + field(12)
}

/// Status requests one pod's admin API served, from samples of its
/// connections: per connection (local and peer address), the count at the
/// first sample (the baseline; 0 for a connection opened after it) and the
/// last. The driver's own requests (from the hub) are left out; requests on
/// a connection closed between two samples after the last of them are lost.
#[derive(Debug, Default)]
pub(crate) struct Served {
    connections: BTreeMap<String, (u64, u64)>,
    sampled: bool,
}

impl Served {
    /// Samples pod namespace `ns` once (the first call is the baseline).
    pub(crate) fn sample(&mut self, net: &Net, ns: &str) {
        let filter = format!("( sport = :{ADMIN} )");
        let Ok(out) = net
            .command(ns, "ss")
            .args(["-Htin", "state", "established", &filter])
            .output()
        else {
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let hub = format!("{HUB}:");
        let mut current: Option<String> = None;
        for line in text.lines() {
            if !line.starts_with(char::is_whitespace) {
                let words: Vec<&str> = line.split_whitespace().collect();
                current = (words.len() >= 2)
                    .then(|| (words[words.len() - 2], words[words.len() - 1]))
                    .filter(|(_, peer)| !peer.starts_with(&hub))
                    .map(|(local, peer)| format!("{local} {peer}"));
                continue;
            }
            let Some(key) = current.take() else { continue };
            let Some(segs) = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("data_segs_in:"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            let first = if self.sampled { 0 } else { segs };
            let entry = self.connections.entry(key).or_insert((first, segs));
            entry.1 = entry.1.max(segs);
        }
        self.sampled = true;
    }

    /// Requests seen between the first sample of each connection and its last.
    pub(crate) fn total(&self) -> u64 {
        self.connections.values().map(|(a, b)| b - a).sum()
    }
}
