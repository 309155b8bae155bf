//! The soak's verdict: checks over what was collected, each with the
//! figures behind it.

use serde_json::Value;

use crate::args::Args;
use crate::outcome::Outcome;
use crate::run::Collected;

/// How many more file descriptors the idle proxy may hold at the end than
/// at the start. Both readings are taken with no client connected and no
/// generation draining, on the same configuration shape, so the proxy needs
/// the same sockets; what legitimately differs is the watcher's keep-alive
/// connection to the admin API (seen as one `ESTABLISHED` socket from the
/// admin port) and a socket or two in passing. A leak of one descriptor per
/// reload or per client connection would show as tens to thousands.
pub(crate) const FD_SLACK: u64 = 8;

/// One check: what it means, whether it held, the figures behind it.
#[derive(Debug, Clone)]
pub(crate) struct Check {
    pub(crate) name: &'static str,
    pub(crate) ok: bool,
    pub(crate) detail: String,
}

fn check(name: &'static str, ok: bool, detail: String) -> Check {
    Check { name, ok, detail }
}

fn count(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

fn errors(client: &Value) -> u64 {
    client["error_count"]
        .as_u64()
        .or_else(|| client["errors"].as_array().map(|e| e.len() as u64))
        .unwrap_or(u64::MAX)
}

/// Every check of the soak.
pub(crate) fn checks(c: &Collected, args: &Args) -> Vec<Check> {
    let mut all = clients(c);
    all.extend(reloads(c, args));
    all.extend(generations(c));
    all.extend(signals_and_descriptors(c));
    all
}

/// The clients' messages and errors.
fn clients(c: &Collected) -> Vec<Check> {
    let [unchanged, modified] = &c.clients;
    vec![
        check(
            "no acknowledged message lost",
            count(unchanged, "lost") == 0
                && count(modified, "lost") == 0
                && errors(modified) != u64::MAX,
            format!(
                "unchanged {}, modified {}",
                unchanged["lost"], modified["lost"]
            ),
        ),
        check(
            "the unchanged cluster's clients saw no error",
            errors(unchanged) == 0,
            format!("{} error(s): {}", errors(unchanged), unchanged["errors"]),
        ),
    ]
}

/// Each reload's outcome, and how many there were.
fn reloads(c: &Collected, args: &Args) -> Vec<Check> {
    let applied = c
        .records
        .iter()
        .filter(|r| r.observed.outcome == Outcome::Applied)
        .count() as f64;
    let reloads = |result| {
        c.proxy_metrics
            .sum("sluice_config_reload_total", &[("result", result)])
    };
    let unexpected: Vec<String> = c
        .records
        .iter()
        .filter(|r| !r.as_expected())
        .map(|r| {
            format!(
                "step {} {} {}: {} (clusters ok: {}, ports released: {}) {}",
                r.step.number,
                r.step.kind.as_str(),
                r.step.variant,
                r.observed.outcome.as_str(),
                r.clusters_ok,
                r.ports_released,
                r.observed.detail
            )
        })
        .collect();
    vec![
        check(
            "every reload ended as its kind requires",
            unexpected.is_empty(),
            unexpected.join("; "),
        ),
        check(
            "enough reloads over enough time",
            c.aborted.is_none()
                && c.records.len() >= args.reloads as usize
                && c.reloading >= args.duration,
            format!(
                "{} reloads in {:.0} s{}",
                c.records.len(),
                c.reloading.as_secs_f64(),
                c.aborted
                    .as_ref()
                    .map(|a| format!("; stopped: {a}"))
                    .unwrap_or_default()
            ),
        ),
        check(
            "the proxy applied each applied change once",
            reloads("applied") == applied,
            format!(
                "proxy counted {:.0}, the soak saw {applied:.0}",
                reloads("applied")
            ),
        ),
        check(
            "the watcher never sent a reload for content validate refused",
            reloads("rejected") == 0.0,
            format!("{:.0} reload(s) rejected", reloads("rejected")),
        ),
    ]
}

/// Connections and generations: nothing refused, nothing rebuilt that
/// should not be, nothing left behind.
fn generations(c: &Collected) -> Vec<Check> {
    let refused: u64 = c.probes.iter().map(|p| p.refused).sum();
    // Scraped once nothing drains: one connection series per running
    // generation, and no failed generation (failed reloads keep none).
    let generation_series = c
        .proxy_metrics
        .count("sluice_generation_connections_active");
    let failed_reported = c
        .proxy_metrics
        .sum("sluice_virtual_cluster_state", &[("state", "failed")]);
    vec![
        check(
            "no connection to a bootstrap port refused",
            refused == 0,
            format!("{refused} refused"),
        ),
        check(
            "the unchanged cluster was never rebuilt",
            c.generations.get("unchanged") == Some(&1),
            format!("generation {:?}", c.generations.get("unchanged")),
        ),
        check(
            "the unchanged cluster's clients never reconnected",
            c.unchanged_reconnections == 0.0,
            format!("{} new connection(s)", c.unchanged_reconnections),
        ),
        check(
            "no metric series left by generations that ended",
            generation_series == c.generations.len() && failed_reported == 0.0,
            format!(
                "{generation_series} connection series for {} running generation(s); {failed_reported} failed generation(s) reported",
                c.generations.len()
            ),
        ),
    ]
}

/// SIGHUP, concurrent reloads, SIGTERM's drain, and file descriptors.
fn signals_and_descriptors(c: &Collected) -> Vec<Check> {
    let (q0, q1) = c.quiescent;
    let (d, t) = (&c.disturbed, &c.sigterm);
    vec![
        check(
            "every SIGHUP was applied, none dropped (some after a running reload)",
            d.sighups_sent > 0 && d.sighups_handled >= d.sighups_sent,
            format!(
                "{} sent, {} handled, {} waited for another reload",
                d.sighups_sent, d.sighups_handled, d.sighups_waited
            ),
        ),
        check(
            "concurrent reloads changed nothing and failed none (200, 409 or 412)",
            !d.concurrent.is_empty()
                && d.concurrent_changed == 0
                && d.concurrent.keys().all(|s| [200, 409, 412].contains(s)),
            format!(
                "by status {:?}; {} changed something",
                d.concurrent, d.concurrent_changed
            ),
        ),
        check(
            "a reload during the drain answered 503, no port reopened, exit 0",
            t.reload_status == 503 && t.port_refused && t.exit_code == Some(0),
            format!(
                "reload {}, port refused {}, exit {:?} {:.1} s after the last connection",
                t.reload_status, t.port_refused, t.exit_code, t.exit_after_s
            ),
        ),
        check(
            "idle file descriptors back to their start",
            q1.fds > 0 && q1.fds <= q0.fds + FD_SLACK,
            format!("{} at start, {} at end (slack {FD_SLACK})", q0.fds, q1.fds),
        ),
    ]
}
