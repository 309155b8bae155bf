//! The watcher's loop: new content → this pod's delay (restarted by newer
//! content) → status → validate → reload, with retries; rejected content is
//! remembered and never sent again; a periodic resync reconciles the proxy
//! with the file whatever events were missed. Each pass observes, asks
//! [`crate::decide`] for the next step, acts, and remembers.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sluice_admin_api::{ConfigVersion, EffectiveVersion};
use tokio::sync::watch;
use tokio::time::Interval;

use crate::client::ProxyClient;
use crate::decide::{Memory, Observed, Stage, Step, Trigger, decide};
use crate::events::{Kind, PodEvents, record as event};
use crate::fleet::rollout::{FleetSettings, GateResult, Rollout};
use crate::fleet::start::{self, Settled};
pub use crate::heartbeat::Heartbeat;
use crate::metrics::Metrics;
use crate::referenced::Referenced;
use crate::schedule::{self, Slot};
use crate::volume::{Content, VolumeWatcher, WatchOptions};

mod apply;
mod follow;
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
                tracing::info!(version = version(&content), "newer content during the wait; starting the wait again");
            }
        }
    }
}

/// `content`'s version for logs and labels (empty when unreadable).
fn version(content: &Content) -> &str {
    content.digest.as_ref().map_or("", ConfigVersion::as_str)
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
    // What is there now is what the first pass reconciles at once; content
    // arriving later (during the look at the fleet below too) waits its turn.
    let initial = rx.borrow_and_update().clone();
    tracing::info!(path = %settings.path.display(), volume = crate::volume::is_volume(&settings.path), "watching configuration");
    let mut resync = tokio::time::interval(settings.watch.resync);
    resync.tick().await;
    heartbeat.beat();
    // A proxy started held serves what the fleet vouches for (one look
    // before the first pass; each pass looks again).
    let volume = rx.borrow().digest.clone();
    let fleet = settings.fleet.as_ref();
    start::settle(&client, fleet, volume.as_ref(), events.as_ref()).await;
    let passes = Passes {
        referenced: Referenced::new(&settings.path, settings.watch.clone()),
        rollout: settings
            .fleet
            .clone()
            .map(|f| Rollout::new(f, settings.stagger, settings.jitter)),
        settings,
        client,
        metrics,
        heartbeat,
        events,
        rx,
        memory: Memory::default(),
        first: true,
    };
    passes.run(resync, initial).await;
    drop(watcher);
}

/// The loop's state: its inputs, and what it remembers between passes.
struct Passes {
    settings: Settings,
    client: ProxyClient,
    metrics: Arc<Metrics>,
    heartbeat: Arc<Heartbeat>,
    events: Option<PodEvents>,
    rx: watch::Receiver<Content>,
    referenced: Referenced,
    memory: Memory,
    rollout: Option<Rollout>,
    /// No pass has reported yet.
    first: bool,
}

impl Passes {
    async fn run(mut self, mut resync: Interval, initial: Content) {
        // At startup, reconcile at once: no stagger for a pod coming up.
        let mut next = Some((initial, Trigger::Start));
        loop {
            self.heartbeat.beat();
            let (content, trigger) = match next.take() {
                Some(n) => n,
                None => match self.wake(&mut resync).await {
                    Some(w) => w,
                    None => return,
                },
            };
            self.heartbeat.beat();
            next = self.pass(content, trigger).await;
        }
    }

    /// Waits for something to do; `None` when the watch ended.
    async fn wake(&mut self, resync: &mut Interval) -> Option<(Content, Trigger)> {
        tokio::select! {
            changed = self.rx.changed() => {
                changed.ok()?;
                let c = self.rx.borrow_and_update().clone();
                self.metrics.swap_seen(version(&c), c.data_dir.as_deref());
                Some((c, Trigger::Config))
            }
            () = self.referenced.changed() => Some((self.rx.borrow().clone(), Trigger::Files)),
            _ = resync.tick() => {
                // Inotify can drop events: every file is read again.
                self.referenced.forget();
                Some((self.rx.borrow().clone(), Trigger::Resync))
            }
        }
    }

    /// One pass: observe → decide → act → remember. Returns the content to
    /// take at once, if any (newer content, or back to the gate).
    async fn pass(&mut self, content: Content, trigger: Trigger) -> Option<(Content, Trigger)> {
        let (fleet, events) = (self.settings.fleet.as_ref(), self.events.as_ref());
        let volume = content.digest.as_ref();
        if let Settled::FromPeer(_) = start::settle(&self.client, fleet, volume, events).await {
            // Its proxy now runs a peer's version: the volume's is gated.
            self.memory.in_sync = None;
        }
        // The effective version, computed once for this decision.
        let seen = self.referenced.seen(&content);
        let stage = Stage::Woke {
            trigger,
            peers: self.rollout.is_some(),
        };
        let observed = Observed {
            stage: &stage,
            seen: seen.as_ref(),
            proxy: None,
            validated: None,
        };
        let step = decide(&observed, &self.memory);
        if matches!(step, Step::StillRejected | Step::InSync) {
            return None;
        }
        if trigger == Trigger::Files {
            tracing::info!(
                version = version(&content),
                "a file the configuration references changed"
            );
        }
        let (content, gated) = match step {
            Step::Unreadable => {
                let failed = Outcome::Failed(apply::UNREADABLE.into());
                return self.report(&content, failed, trigger).await;
            }
            Step::ToGate => match self.gate(content).await {
                Ok(go) => go,
                Err(next) => return next,
            },
            Step::WaitTurn => {
                let turn = wait_turn(&self.settings, &self.heartbeat, &mut self.rx, content);
                (turn.await, None)
            }
            _ => (content, None),
        };
        self.heartbeat.beat();
        let effective = Effective {
            in_sync: self.memory.in_sync.as_ref(),
            gated: gated.as_ref(),
        };
        let deadline = self.settings.retry_deadline;
        let (outcome, about) = apply(
            &self.client,
            &self.metrics,
            &content,
            deadline,
            &mut self.rx,
            &mut self.referenced,
            effective,
        )
        .await;
        if !self.memory.remember(&outcome, about) {
            tracing::debug!(version = version(&content), "still rejected at resync");
            return None;
        }
        self.report(&content, outcome, trigger).await
    }

    /// Waits at the rollout gate: the content to apply and, for a rollout of
    /// files, the effective version the gate opened for; else what to do
    /// next.
    async fn gate(
        &mut self,
        content: Content,
    ) -> Result<(Content, Option<EffectiveVersion>), Option<(Content, Trigger)>> {
        let Some(rollout) = self.rollout.as_mut() else {
            return Ok((content, None));
        };
        let waited = rollout.wait(
            &self.client,
            &self.metrics,
            &self.heartbeat,
            &mut self.rx,
            content,
            &mut self.referenced,
            &mut self.memory,
        );
        let poll = self
            .settings
            .fleet
            .as_ref()
            .map_or(Duration::from_secs(1), |f| f.poll);
        let waited = tokio::select! {
            w = waited => w,
            // Its proxy restarted held: the next pass settles it first.
            () = start::until_held(&self.client, poll) => {
                return Err(Some((self.rx.borrow().clone(), Trigger::Resync)));
            }
        };
        match waited {
            GateResult::Go { content, effective } => Ok((content, effective)),
            GateResult::Superseded(c) => {
                self.metrics.swap_seen(version(&c), c.data_dir.as_deref());
                Err(Some((c, Trigger::Config)))
            }
            GateResult::Halted { instance, cause } => {
                if !instance.is_empty() {
                    let message = format!(
                        "rollout of proxy configuration halted: {instance} failed it: {cause}"
                    );
                    event(
                        self.events.as_ref(),
                        Kind::Warning,
                        "RolloutHalted",
                        message,
                    );
                }
                Err(None)
            }
        }
    }

    /// Reports how applying `content` ended (logs, metrics, Events, a halt
    /// here); returns the content to take at once, if any.
    async fn report(
        &mut self,
        content: &Content,
        outcome: Outcome,
        trigger: Trigger,
    ) -> Option<(Content, Trigger)> {
        let v = version(content);
        // Its proxy analyses what it applies: follow it (a version found in
        // force at start too, when its analysis still runs).
        let follow = match outcome {
            Outcome::Applied => Some(false),
            Outcome::Unchanged if self.first => Some(true),
            _ => None,
        };
        let events = self.events.as_ref();
        let mut next = None;
        match outcome {
            Outcome::Applied => {
                self.metrics.applied(v, content.propagation_lag());
                let message = format!("proxy configuration {v} applied");
                event(events, Kind::Normal, "ConfigApplied", message);
            }
            Outcome::Unchanged if trigger.staggered() || self.first => self.metrics.unchanged(v),
            Outcome::Unchanged => {}
            Outcome::Rejected(errors) => {
                self.metrics.rejected(v, &errors);
                let message = format!("proxy configuration {v} rejected: {}", errors.join("; "));
                event(events, Kind::Warning, "ConfigRejected", message);
                if let (Some(rollout), Some(config)) = (&mut self.rollout, &content.digest) {
                    let cause = "validation rejected it";
                    rollout.failed_here(&self.metrics, &mut self.memory, config, cause);
                }
            }
            Outcome::Failed(reason) => {
                self.metrics.failed(v, &reason);
                let message = format!("proxy configuration {v} not applied: {reason}");
                event(events, Kind::Warning, "ConfigFailed", message);
                if let (Some(rollout), Some(config)) = (&mut self.rollout, &content.digest) {
                    // Only a failure the proxy itself recorded for this
                    // version (its upstream check, its prepare) halts the
                    // rollout; a proxy unreachable until the deadline does not.
                    let (client, metrics) = (&self.client, &self.metrics);
                    let memory = &mut self.memory;
                    rollout
                        .failed_here_if_recorded(client, metrics, memory, config, &reason)
                        .await;
                }
            }
            Outcome::Superseded => {
                let c = self.rx.borrow_and_update().clone();
                self.metrics.swap_seen(version(&c), c.data_dir.as_deref());
                next = Some((c, Trigger::Config));
            }
            Outcome::Regate => {
                tracing::info!(
                    version = v,
                    "the referenced files changed again after the rollout gate opened; back to the gate"
                );
                next = Some((content.clone(), Trigger::Files));
            }
        }
        self.first = false;
        match follow {
            Some(found) => self.follow(content, found).await,
            None => next,
        }
    }
}
