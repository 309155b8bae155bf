//! UPDATE warnings: what a reload from the old configuration to the new one
//! will do, from `sluice_config::diff`. Kubernetes asks for warnings of
//! at most 120 characters and few of them; the most disruptive come first.

use sluice_config::ConfigDiff;

use super::message::cap;

/// Most warnings returned; the last one summarises the rest.
pub const MAX_WARNINGS: usize = 5;

/// Longest warning, in characters, as Kubernetes recommends.
pub const MAX_WARNING_CHARS: usize = 120;

/// The warnings for a change: clusters drained and restarted (with why),
/// removed, added, then proxy-wide settings.
pub fn warnings(d: &ConfigDiff) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for m in &d.modified {
        all.push(format!(
            "cluster \"{}\" will drain and restart: {}",
            m.name,
            m.reasons.join(", ")
        ));
    }
    for name in &d.removed {
        all.push(format!(
            "cluster \"{name}\" will be removed: its connections drain and close"
        ));
    }
    for name in &d.added {
        all.push(format!("cluster \"{name}\" will be added"));
    }
    for change in &d.global {
        all.push(format!("proxy-wide: {change}"));
    }
    if all.len() > MAX_WARNINGS {
        let rest = all.len() - (MAX_WARNINGS - 1);
        all.truncate(MAX_WARNINGS - 1);
        all.push(format!(
            "and {rest} more changes: run `sluice-proxy diff` on the two versions for all"
        ));
    }
    all.iter().map(|w| cap(w, MAX_WARNING_CHARS)).collect()
}
