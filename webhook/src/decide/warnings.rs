//! Admission warnings: SNI names a gateway certificate does not cover (when
//! files are checked), then, on UPDATE, what a reload from the old
//! configuration to the new one will do, from `sluice_config::diff`.
//! Kubernetes asks for warnings of at most 120 characters and few of them;
//! the most disruptive come first.

use sluice_config::{Changes, ProxyConfig};

use super::message::cap;

/// Most warnings returned; the last one summarises the rest.
pub const MAX_WARNINGS: usize = 5;

/// Longest warning, in characters, as Kubernetes recommends.
pub const MAX_WARNING_CHARS: usize = 120;

/// The warnings for an admitted configuration: its certificates' SNI
/// coverage (nothing to say when files are not read), then the change, if
/// it replaces a valid one.
pub fn admission_warnings(d: Option<&Changes>, config: &ProxyConfig) -> Vec<String> {
    let mut all = sluice_config::warnings::warnings(config);
    all.extend(d.map(changes).unwrap_or_default());
    summarise(all)
}

/// The warnings for a change: clusters drained and restarted (with why),
/// removed, added, changed in place (with what), then proxy-wide settings.
pub fn warnings(d: &Changes) -> Vec<String> {
    summarise(changes(d))
}

fn changes(d: &Changes) -> Vec<String> {
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
    for m in &d.rotated {
        all.push(format!(
            "cluster \"{}\" applies in place, no drain: {}",
            m.name,
            m.reasons.join(", ")
        ));
    }
    for change in &d.global {
        all.push(format!("proxy-wide: {change}"));
    }
    all
}

/// At most [`MAX_WARNINGS`], each at most [`MAX_WARNING_CHARS`].
fn summarise(mut all: Vec<String>) -> Vec<String> {
    if all.len() > MAX_WARNINGS {
        let rest = all.len() - (MAX_WARNINGS - 1);
        all.truncate(MAX_WARNINGS - 1);
        all.push(format!(
            "and {rest} more changes: run `sluice-proxy diff` on the two versions for all"
        ));
    }
    all.iter().map(|w| cap(w, MAX_WARNING_CHARS)).collect()
}
