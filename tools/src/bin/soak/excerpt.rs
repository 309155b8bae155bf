//! For a step that did not end as its kind requires: the lines of the
//! proxy's and the watcher's logs that name its version or the previous
//! step's (with a few lines around each), and the soak's own lines for the
//! steps around it, so that a failure explains itself in the report.

use std::time::UNIX_EPOCH;

use serde_json::{Value, json};
use sluice_testkit::config::version;

use crate::run::Record;

/// Lines kept on either side of a line that names a version.
const AROUND: usize = 2;
/// At most this many lines of each log per failing step.
const MAX_LINES: usize = 80;
/// At most this many failing steps get excerpts.
const MAX_STEPS: usize = 5;

/// The part of a version that every log writes (full or short).
fn needle(text: &str) -> String {
    let v = version(text);
    let hex = v.split_once(':').map_or(v.as_str(), |(_, hex)| hex);
    hex.chars().take(12).collect()
}

/// The lines of `lines` that contain any of `needles`, with `AROUND` lines
/// either side, in order, at most `MAX_LINES` (a gap marked `...`).
pub(crate) fn around(lines: &[String], needles: &[String]) -> Vec<String> {
    let mut keep = vec![false; lines.len()];
    for (i, line) in lines.iter().enumerate() {
        if needles.iter().any(|n| line.contains(n.as_str())) {
            let end = (i + AROUND + 1).min(lines.len());
            keep[i.saturating_sub(AROUND)..end].fill(true);
        }
    }
    let mut out = Vec::new();
    let mut last = None;
    for (i, line) in lines.iter().enumerate().filter(|(i, _)| keep[*i]) {
        if out.len() >= MAX_LINES {
            out.push(format!(
                "... (more lines name these versions: {MAX_LINES} kept)"
            ));
            break;
        }
        if last.is_some_and(|l| l + 1 != i) {
            out.push("...".to_owned());
        }
        out.push(line.clone());
        last = Some(i);
    }
    out
}

/// The soak's own line for one step.
pub(crate) fn own_line(r: &Record) -> String {
    let at = r.observed.at.duration_since(UNIX_EPOCH).unwrap_or_default();
    format!(
        "t={:.3} step {} {} {} version {}: {} in {} ms (clusters ok: {}, ports released: {}) {}",
        at.as_secs_f64(),
        r.step.number,
        r.step.kind.as_str(),
        r.step.variant,
        version(&r.step.text),
        r.observed.outcome.as_str(),
        r.observed.took.as_millis(),
        r.clusters_ok,
        r.ports_released,
        r.observed.detail
    )
}

/// Per failing step (at most `MAX_STEPS`): the soak's lines for it and the
/// steps on either side, and the proxy's and the watcher's (`logs`) that
/// name its version or the previous step's.
pub(crate) fn failing_steps(records: &[Record], logs: &[Vec<String>; 2]) -> Vec<Value> {
    let failing = records
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.as_expected())
        .take(MAX_STEPS);
    failing
        .map(|(i, r)| {
            let from = i.saturating_sub(1);
            let nearby = &records[from..(i + 2).min(records.len())];
            let needles: Vec<String> = nearby[..=i - from]
                .iter()
                .map(|r| needle(&r.step.text))
                .collect();
            json!({
                "step": r.step.number,
                "soak": nearby.iter().map(own_line).collect::<Vec<_>>(),
                "proxy": around(&logs[0], &needles),
                "watcher": around(&logs[1], &needles),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("line {i}")).collect()
    }

    #[test]
    fn keeps_the_lines_naming_a_version_and_their_neighbours() {
        let mut log = lines(20);
        log[3] = "reload failed version=sha256:abc".to_owned();
        log[12] = "configuration reloaded version=sha256:def".to_owned();
        let kept = around(&log, &["abc".to_owned(), "def".to_owned()]);
        let expected = [
            "line 1", "line 2", &log[3], "line 4", "line 5", "...", "line 10", "line 11", &log[12],
            "line 13", "line 14",
        ];
        assert_eq!(kept, expected);
        assert!(around(&log, &["nothing".to_owned()]).is_empty());
    }

    #[test]
    fn keeps_at_most_max_lines() {
        let log: Vec<String> = (0..500).map(|i| format!("v=abc {i}")).collect();
        let kept = around(&log, &["abc".to_owned()]);
        assert_eq!(kept.len(), MAX_LINES + 1);
        assert!(kept[MAX_LINES].starts_with("... (more"));
    }
}
