//! Comparing the front door before a change with the front door after it,
//! pure: a step that worked before and fails now is a finding; a node
//! advertised before and missing now is a finding on step `metadata`; a
//! step that fails now and did not work before (failed, did not run, or the
//! cluster is new) is a note, never a reason to return.

use std::collections::BTreeSet;

use sluice_admin_api::analysis::{DoorStep, Finding, FrontDoor};

use super::steps::{BROKERS, METADATA};

/// The findings (worse after than before) and notes (not fine after, and
/// not fine before either) of one cluster's front door. `before` is `None`
/// for a cluster the change adds: notes only.
pub fn compare(
    cluster: &str,
    before: Option<&FrontDoor>,
    after: &FrontDoor,
) -> (Vec<Finding>, Vec<String>) {
    let mut findings = Vec::new();
    let mut notes = Vec::new();
    for now in &after.steps {
        let was = before.and_then(|b| b.steps.iter().find(|s| s.step == now.step));
        let worked = was.filter(|w| w.ok);
        match (worked, now.ok) {
            (Some(was), false) => findings.push(Finding {
                cluster: cluster.to_owned(),
                step: now.step.clone(),
                before: worked_text(was),
                after: failed_text(now),
            }),
            (None, false) => notes.push(note(before.is_some(), now)),
            (Some(was), true) if now.step == METADATA => {
                findings.extend(missing(cluster, was, now));
            }
            _ => {}
        }
    }
    (findings, notes)
}

/// A step that works, as a person reads it.
fn worked_text(step: &DoorStep) -> String {
    match step.step.as_str() {
        METADATA => format!("{} advertised {}", step.address, listed(&step.advertised)),
        BROKERS => format!("every broker answered ApiVersions ({})", step.address),
        _ => format!("{} answered ApiVersions", step.address),
    }
}

/// A step that fails, as a person reads it. The brokers step's error
/// names each failing broker and its address already.
fn failed_text(step: &DoorStep) -> String {
    let error = step.error.as_deref().unwrap_or("failed");
    match step.step.as_str() {
        BROKERS => error.to_owned(),
        _ => format!("{}: {error}", step.address),
    }
}

fn note(checked_before: bool, step: &DoorStep) -> String {
    let why = if checked_before {
        "never worked"
    } else {
        "not checked before (cluster added)"
    };
    format!("{why}: {}: {}", step.step, failed_text(step))
}

/// The nodes `was` advertised that `now` does not.
fn missing(cluster: &str, was: &DoorStep, now: &DoorStep) -> Option<Finding> {
    let present: BTreeSet<&str> = now.advertised.iter().filter_map(|a| node(a)).collect();
    let gone: Vec<String> = was
        .advertised
        .iter()
        .filter_map(|a| node(a))
        .filter(|id| !present.contains(id))
        .map(|id| format!("node {id}"))
        .collect();
    if gone.is_empty() {
        return None;
    }
    Some(Finding {
        cluster: cluster.to_owned(),
        step: METADATA.to_owned(),
        before: worked_text(was),
        after: format!(
            "{} advertised {}: {} no longer advertised",
            now.address,
            listed(&now.advertised),
            gone.join(", ")
        ),
    })
}

/// The node id of `node <id> at <host>:<port>`.
fn node(advertised: &str) -> Option<&str> {
    advertised
        .strip_prefix("node ")?
        .split_once(" at ")
        .map(|(id, _)| id)
}

fn listed(advertised: &[String]) -> String {
    if advertised.is_empty() {
        "no broker".to_owned()
    } else {
        advertised.join(", ")
    }
}

#[cfg(test)]
mod tests;
