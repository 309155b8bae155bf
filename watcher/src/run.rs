//! The watcher's loop: new content → this pod's delay (restarted by newer
//! content) → status → validate → reload, with retries; rejected content is
//! remembered and never sent again; a periodic resync reconciles the proxy
//! with the file whatever events were missed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::client::ProxyClient;
use crate::events::{Kind, PodEvents};
use crate::fleet::rollout::{Files, FleetSettings, GateResult, Rollout};
pub use crate::heartbeat::Heartbeat;
use crate::metrics::Metrics;
use crate::referenced::Referenced;
use crate::schedule::{self, Slot};
use crate::volume::{Content, VolumeWatcher, WatchOptions};

mod apply;
pub use apply::{Effective, Outcome, apply};

/// Everything the loop needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The watched file.
    pub path: PathBuf,
    /// How it is watched.
    pub watch: WatchOptions,
    /// This pod's slot.
    pub slot: Slot,
    /// Delay per slot.
    pub stagger: Duration,
    /// Random extra delay, at most this.
    pub jitter: Duration,
    /// How long one content is retried before giving up until the next resync.
    pub retry_deadline: Duration,
    /// The fleet rollout (`--peers`/`--peers-dns`): the canary gate instead
    /// of the per-slot delay.
    pub fleet: Option<FleetSettings>,
}

/// Waits this pod's delay before acting on new content; newer content
/// arriving meanwhile restarts the wait with it. Returns the content to apply.
pub async fn wait_turn(
    settings: &Settings,
    heartbeat: &Heartbeat,
    rx: &mut watch::Receiver<Content>,
    mut content: Content,
) -> Content {
    loop {
        let delay = schedule::delay(
            settings.slot,
            settings.stagger,
            settings.jitter,
            schedule::random_unit(),
        );
        if delay.is_zero() {
            return content;
        }
        tracing::info!(
            delay_ms = delay.as_millis() as u64,
            slot = settings.slot.index,
            "waiting for this pod's turn"
        );
        // Waiting is progress: liveness must not restart a watcher that
        // waits its turn, however high its slot.
        let waited = heartbeat.beating_while(tokio::time::sleep(delay));
        tokio::select! {
            () = waited => return content,
            changed = rx.changed() => {
                if changed.is_err() {
                    return content;
                }
                content = rx.borrow_and_update().clone();
                tracing::info!(version = %content.digest, "newer content during the wait; starting the wait again");
            }
        }
    }
}

/// Records an Event in the background, when Events are on.
fn event(events: Option<&PodEvents>, kind: Kind, reason: &'static str, message: String) {
    if let Some(events) = events.cloned() {
        tokio::spawn(async move { events.report(kind, reason, &message).await });
    }
}

/// What woke the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// The watcher started: reconcile at once.
    Start,
    /// The configuration changed.
    Config,
    /// A file it references changed.
    Files,
    /// The periodic resync.
    Resync,
}

/// Runs the watcher until the watch ends.
pub async fn run(
    settings: Settings,
    client: ProxyClient,
    metrics: Arc<Metrics>,
    heartbeat: Arc<Heartbeat>,
    events: Option<PodEvents>,
) {
    if crate::volume::looks_like_subpath(&settings.path) {
        tracing::warn!(path = %settings.path.display(), "the file looks like a subPath mount: Kubernetes never updates those; mount the ConfigMap as a directory");
    }
    let watcher = match VolumeWatcher::start(&settings.path, settings.watch.clone()) {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch the configuration");
            return;
        }
    };
    let mut rx = watcher.subscribe();
    tracing::info!(path = %settings.path.display(), volume = crate::volume::is_volume(&settings.path), "watching configuration");
    let mut resync = tokio::time::interval(settings.watch.resync);
    resync.tick().await;
    heartbeat.beat();
    // At startup, reconcile at once: no stagger for a pod coming up.
    let mut next = Some((rx.borrow_and_update().clone(), Trigger::Start));
    let mut referenced = Referenced::new(&settings.path, settings.watch.clone());
    // The effective version (configuration and referenced files, as seen
    // here) last rejected, and last brought in sync with the proxy.
    let mut rejected: Option<String> = None;
    let mut in_sync: Option<String> = None;
    let mut first = true;
    let mut rollout = settings
        .fleet
        .clone()
        .map(|f| Rollout::new(f, settings.stagger, settings.jitter));
    loop {
        heartbeat.beat();
        let (content, trigger) = match next.take() {
            Some(n) => n,
            None => tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let c = rx.borrow_and_update().clone();
                    metrics.swap_seen(&c.digest, c.data_dir.as_deref());
                    (c, Trigger::Config)
                }
                () = referenced.changed() => (rx.borrow().clone(), Trigger::Files),
                _ = resync.tick() => (rx.borrow().clone(), Trigger::Resync),
            },
        };
        heartbeat.beat();
        let seen = referenced.effective(&content);
        // A rejected version is tried again when anything it is made of
        // changes (another version), and at each resync: a file it lacked
        // may have appeared where the proxy reads it.
        if trigger != Trigger::Resync && rejected.as_deref() == Some(seen.as_str()) {
            continue;
        }
        if trigger == Trigger::Files && in_sync.as_deref() == Some(seen.as_str()) {
            continue;
        }
        let staggered = matches!(trigger, Trigger::Config | Trigger::Files);
        if trigger == Trigger::Files {
            tracing::info!(version = %content.digest, "a file the configuration references changed");
        }
        // With peers, every version (at startup too: a restarted watcher
        // re-derives a halt from its peers) passes the gate; without, a new
        // version waits this pod's delay.
        let (content, gated) = match (&mut rollout, staggered) {
            (Some(rollout), _) => {
                match rollout
                    .wait(
                        &client,
                        &metrics,
                        &heartbeat,
                        &mut rx,
                        content,
                        Files {
                            referenced: &mut referenced,
                            in_sync: in_sync.as_deref(),
                        },
                    )
                    .await
                {
                    GateResult::Go { content, effective } => (content, effective),
                    GateResult::Superseded(c) => {
                        metrics.swap_seen(&c.digest, c.data_dir.as_deref());
                        next = Some((c, Trigger::Config));
                        continue;
                    }
                    GateResult::Halted { instance, cause } => {
                        if !instance.is_empty() {
                            let message = format!(
                                "rollout of proxy configuration halted: {instance} failed it: {cause}"
                            );
                            event(events.as_ref(), Kind::Warning, "RolloutHalted", message);
                        }
                        continue;
                    }
                }
            }
            (None, true) => (
                wait_turn(&settings, &heartbeat, &mut rx, content).await,
                None,
            ),
            (None, false) => (content, None),
        };
        heartbeat.beat();
        let events = events.as_ref();
        let (outcome, about) = apply(
            &client,
            &metrics,
            &content,
            settings.retry_deadline,
            &mut rx,
            &mut referenced,
            Effective {
                in_sync: in_sync.as_deref(),
                gated: gated.as_deref(),
            },
        )
        .await;
        // The files named by the proxy's answers count from here on.
        let seen = about.unwrap_or_else(|| referenced.effective(&content));
        match outcome {
            Outcome::Applied | Outcome::Unchanged => {
                rejected = None;
                // What the proxy was found to run, not the files read now:
                // they may have changed since, and that change is still to
                // be applied (through the gate).
                in_sync = Some(seen);
            }
            Outcome::Rejected(_) if rejected.as_deref() == Some(seen.as_str()) => {
                tracing::debug!(version = %content.digest, "still rejected at resync");
                continue;
            }
            Outcome::Rejected(_) => rejected = Some(seen),
            Outcome::Failed(_) | Outcome::Superseded | Outcome::Regate => {}
        }
        match outcome {
            Outcome::Applied => {
                metrics.applied(&content.digest, content.propagation_lag());
                event(
                    events,
                    Kind::Normal,
                    "ConfigApplied",
                    format!("proxy configuration {} applied", content.digest),
                );
            }
            Outcome::Unchanged => {
                if staggered || first {
                    metrics.unchanged(&content.digest);
                }
            }
            Outcome::Rejected(errors) => {
                metrics.rejected(&content.digest, &errors);
                let message = format!(
                    "proxy configuration {} rejected: {}",
                    content.digest,
                    errors.join("; ")
                );
                event(events, Kind::Warning, "ConfigRejected", message);
                if let Some(rollout) = &mut rollout {
                    rollout.failed_here(&metrics, &content, "validation rejected it");
                }
            }
            Outcome::Failed(reason) => {
                metrics.failed(&content.digest, &reason);
                let message = format!(
                    "proxy configuration {} not applied: {reason}",
                    content.digest
                );
                event(events, Kind::Warning, "ConfigFailed", message);
                if let Some(rollout) = &mut rollout {
                    // Only a failure the proxy itself recorded for this version
                    // (its upstream check, its prepare) halts the rollout; a
                    // proxy that was unreachable until the deadline does not.
                    rollout
                        .failed_here_if_recorded(&client, &metrics, &content, &reason)
                        .await;
                }
            }
            Outcome::Superseded => {
                let c = rx.borrow_and_update().clone();
                metrics.swap_seen(&c.digest, c.data_dir.as_deref());
                next = Some((c, Trigger::Config));
            }
            Outcome::Regate => {
                tracing::info!(version = %content.digest, "the referenced files changed again after the rollout gate opened; back to the gate");
                next = Some((content, Trigger::Files));
            }
        }
        first = false;
    }
}
