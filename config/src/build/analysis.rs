//! `virtualClusters[].analysis`: the client-side analysis of a change (see
//! [`crate::model::analysis`]). Every field is optional; what is absent
//! takes its default, and the whole block is on by default.

use std::sync::Arc;
use std::time::Duration;

use super::super::model::analysis::{
    AnalysisSettings, FrontDoorSettings, MAX_ANALYSIS_WINDOW, MAX_FRONT_DOOR_TIMEOUT, SIGNAL_NAMES,
    SignalSettings,
};
use super::super::read::{Cx, Fields, boolean, index, integer, list, string, suggest};
use super::super::tls::{Loaded, ca_certificates};
use super::super::types::format_duration;
use super::super::yaml::{Node, Value};
use super::duration;

const ANALYSIS_KEYS: &[&str] = &["enabled", "window", "frontDoor", "signals"];
const FRONT_DOOR_KEYS: &[&str] = &["enabled", "timeout", "caFile"];
const SIGNALS_KEYS: &[&str] = &["enabled", "minEvents", "ratio", "ignore"];
/// Bounds of `signals.ratio`: below 1 a signal that got better would count.
const MIN_RATIO: f64 = 1.0;
const MAX_RATIO: f64 = 1000.0;
/// Largest `signals.minEvents`.
const MAX_MIN_EVENTS: i64 = 1_000_000;

/// Reads an `analysis` block.
pub(super) fn analysis(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<AnalysisSettings> {
    let f = Fields::of(cx, node, path, ANALYSIS_KEYS)?;
    let defaults = AnalysisSettings::default();
    let enabled = f.optional(cx, "enabled", boolean);
    let window = f.optional(cx, "window", |cx, node, path| {
        bounded(cx, node, path, MAX_ANALYSIS_WINDOW)
    });
    let front_door = f.optional(cx, "frontDoor", front_door);
    let signals = f.optional(cx, "signals", signals);
    let bad = (enabled.is_none() && f.has("enabled"))
        || (window.is_none() && f.has("window"))
        || (front_door.is_none() && f.has("frontDoor"))
        || (signals.is_none() && f.has("signals"));
    (!bad).then(|| AnalysisSettings {
        enabled: enabled.unwrap_or(defaults.enabled),
        window: window.unwrap_or(defaults.window),
        front_door: front_door.unwrap_or(defaults.front_door),
        signals: signals.unwrap_or(defaults.signals),
    })
}

fn front_door(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<FrontDoorSettings> {
    let f = Fields::of(cx, node, path, FRONT_DOOR_KEYS)?;
    let defaults = FrontDoorSettings::default();
    let enabled = f.optional(cx, "enabled", boolean);
    let timeout = f.optional(cx, "timeout", |cx, node, path| {
        bounded(cx, node, path, MAX_FRONT_DOOR_TIMEOUT)
    });
    let ca = f.optional(cx, "caFile", ca_certificates);
    let bad = (enabled.is_none() && f.has("enabled"))
        || (timeout.is_none() && f.has("timeout"))
        || (ca.is_none() && f.has("caFile"));
    if bad {
        return None;
    }
    let (ca_file, ca) = match ca {
        Some((file, certs)) => (Some(file), Loaded(Arc::new(certs))),
        None => (None, defaults.ca),
    };
    Some(FrontDoorSettings {
        enabled: enabled.unwrap_or(defaults.enabled),
        timeout: timeout.unwrap_or(defaults.timeout),
        ca_file,
        ca,
    })
}

fn signals(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<SignalSettings> {
    let f = Fields::of(cx, node, path, SIGNALS_KEYS)?;
    let defaults = SignalSettings::default();
    let enabled = f.optional(cx, "enabled", boolean);
    let min_events = f.optional(cx, "minEvents", |cx, node, path| {
        // Within 1..=MAX_MIN_EVENTS: positive, so the cast is exact.
        integer(cx, node, path, 1, MAX_MIN_EVENTS).map(|n| n as u64)
    });
    let ratio = f.optional(cx, "ratio", ratio);
    let ignore = f.optional(cx, "ignore", ignore);
    let bad = (enabled.is_none() && f.has("enabled"))
        || (min_events.is_none() && f.has("minEvents"))
        || (ratio.is_none() && f.has("ratio"))
        || (ignore.is_none() && f.has("ignore"));
    (!bad).then(|| SignalSettings {
        enabled: enabled.unwrap_or(defaults.enabled),
        min_events: min_events.unwrap_or(defaults.min_events),
        ratio: ratio.unwrap_or(defaults.ratio),
        ignore: ignore.unwrap_or(defaults.ignore),
    })
}

/// A duration above 0 and at most `max`.
fn bounded(cx: &mut Cx<'_>, node: &Node, path: &str, max: Duration) -> Option<Duration> {
    let d = duration(cx, node, path)?;
    if d.is_zero() {
        return cx.fail(path, node.mark, "must be longer than 0s");
    }
    if d > max {
        let max = format_duration(max);
        return cx.fail(path, node.mark, format_args!("must be at most {max}"));
    }
    Some(d)
}

/// A number written without quotes, within [`MIN_RATIO`]..=[`MAX_RATIO`].
fn ratio(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<f64> {
    let parsed = match &node.value {
        Value::Scalar { text, plain: true } => text.parse::<f64>().ok().filter(|n| n.is_finite()),
        _ => None,
    };
    let Some(n) = parsed else {
        let found = node.value.describe();
        return cx.fail(
            path,
            node.mark,
            format_args!("expected a number, found {found}"),
        );
    };
    if !(MIN_RATIO..=MAX_RATIO).contains(&n) {
        return cx.fail(
            path,
            node.mark,
            format_args!("{n} is out of range {MIN_RATIO:.1}-{MAX_RATIO:.1}"),
        );
    }
    Some(n)
}

/// Signal names, each known, each once.
fn ignore(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Vec<String>> {
    let items = list(cx, node, path)?;
    let mut names: Vec<String> = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let path = index(path, i);
        let Some(name) = string(cx, item, &path) else {
            ok = false;
            continue;
        };
        if !SIGNAL_NAMES.contains(&name) {
            let message = match suggest(name, &SIGNAL_NAMES) {
                Some(close) => format!("unknown signal {name:?}, did you mean {close:?}?"),
                None => format!(
                    "unknown signal {name:?}, known signals: {}",
                    SIGNAL_NAMES.join(", ")
                ),
            };
            cx.error(&path, item.mark, message);
            ok = false;
        } else if names.iter().any(|n| n == name) {
            cx.error(&path, item.mark, format_args!("{name:?} is listed twice"));
            ok = false;
        } else {
            names.push(name.to_owned());
        }
    }
    ok.then_some(names)
}
