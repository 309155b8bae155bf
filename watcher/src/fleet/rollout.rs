//! Waiting at the gate: poll the peers, decide, and either go, wait, or
//! halt. Replaces the per-slot delay when the watcher knows its peers.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use sluice_admin_api::ConfigStatus;

use super::gate::{self, Decision, Target};
use super::peers::{PeerSource, Peers};
use crate::client::ProxyClient;
use crate::heartbeat::Heartbeat;
use crate::metrics::Metrics;
use crate::referenced::Referenced;
use crate::schedule;
use crate::volume::Content;

/// How the watcher takes part in a fleet rollout.
#[derive(Debug, Clone)]
pub struct FleetSettings {
    /// Where the peers are.
    pub source: PeerSource,
    /// The gate's soak and peer timeout.
    pub gate: gate::Settings,
    /// How often the peers are asked while waiting.
    pub poll: Duration,
    /// How long one peer's status call may take.
    pub call_timeout: Duration,
    /// Bearer token for the peers' admin APIs, if they need one.
    pub token: Option<String>,
    /// `--slot`: overrides the rank among the peers.
    pub slot_override: Option<u64>,
}

/// How a wait at the gate ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateResult {
    /// Validate and reload this content now.
    Go {
        /// The content.
        content: Content,
        /// When the rollout is of referenced files that changed under the
        /// configuration in force, the effective version the gate opened
        /// for: files that changed again since are not what the peers ran,
        /// and go back to the gate (see `run::apply`).
        effective: Option<String>,
    },
    /// A peer failed this version: nobody applies it.
    Halted {
        /// The peer that failed it.
        instance: String,
        /// What failed.
        cause: String,
    },
    /// Newer content arrived during the wait: start over with it.
    Superseded(Content),
}

/// A watcher's part in the fleet.
#[derive(Debug)]
pub struct Rollout {
    settings: FleetSettings,
    peers: Peers,
    /// Once the gate opens, the delay for slots above 0, plus up to `jitter`.
    stagger: Duration,
    jitter: Duration,
    /// The version (a [`Target::id`]) whose rollout is halted, if one is.
    halted: Option<String>,
    /// The target last waited for: a failure of its content is recorded
    /// under its id.
    target: Option<Target>,
    /// This pod's instance name, once its proxy said it.
    me: Option<String>,
    /// Whether this watcher and its proxy were seen to read the referenced
    /// files differently (said once).
    disagree_said: bool,
}

/// What the watcher knows of the referenced files when it waits.
#[derive(Debug)]
pub struct Files<'a> {
    /// The files, as the proxy names them, watched here.
    pub referenced: &'a mut Referenced,
    /// The effective version (as seen here) last brought in sync with the
    /// proxy.
    pub in_sync: Option<&'a str>,
}

impl Rollout {
    /// A rollout over the peers `settings` names; slots above 0 wait
    /// `stagger` plus up to `jitter` once the gate opens.
    pub fn new(settings: FleetSettings, stagger: Duration, jitter: Duration) -> Rollout {
        let peers = Peers::new(
            settings.source.clone(),
            settings.token.clone(),
            settings.call_timeout,
        );
        Rollout {
            settings,
            peers,
            stagger,
            jitter,
            halted: None,
            target: None,
            me: None,
            disagree_said: false,
        }
    }

    /// Waits until this pod may apply `content` (see [`gate::decide`]);
    /// then, for a slot above 0, waits the stagger plus up to the jitter
    /// once. When this pod's proxy runs `content`'s configuration already,
    /// the rollout is of the referenced files as `files` reads them.
    pub async fn wait(
        &mut self,
        own: &ProxyClient,
        metrics: &Metrics,
        heartbeat: &Heartbeat,
        rx: &mut watch::Receiver<Content>,
        content: Content,
        files: Files<'_>,
    ) -> GateResult {
        let mut said = String::new();
        loop {
            heartbeat.beat();
            let reason = match self
                .decide(
                    own,
                    metrics,
                    &content,
                    &mut *files.referenced,
                    files.in_sync,
                )
                .await
            {
                Ok((Decision::Done | Decision::Apply, slot)) => {
                    if slot > 0 {
                        let delay = self.stagger
                            + self.jitter.mul_f64(schedule::random_unit().clamp(0.0, 1.0));
                        if !delay.is_zero() {
                            tracing::info!(
                                slot,
                                delay_ms = delay.as_millis() as u64,
                                "gate open; waiting the stagger"
                            );
                            // Waiting is progress: liveness must not
                            // restart a watcher that waits its stagger.
                            tokio::select! {
                                () = heartbeat.beating_while(tokio::time::sleep(delay)) => {}
                                _ = rx.changed() => return GateResult::Superseded(rx.borrow_and_update().clone()),
                            }
                        }
                    }
                    let effective = self.target.as_ref().and_then(|t| t.effective.clone());
                    return GateResult::Go { content, effective };
                }
                Ok((Decision::Halt { instance, cause }, _)) => {
                    let id = self.target_id(&content);
                    if !instance.is_empty() {
                        metrics.fleet.halted(&id, &instance, &cause);
                    }
                    self.halted = Some(id);
                    return GateResult::Halted { instance, cause };
                }
                Ok((Decision::Wait(reason), _)) => reason,
                Err(reason) => reason,
            };
            if reason != said {
                let id = self.target_id(&content);
                tracing::info!(version = %id, %reason, "waiting at the rollout gate");
                said = reason;
            }
            tokio::select! {
                () = tokio::time::sleep(self.settings.poll) => {}
                changed = rx.changed() => {
                    if changed.is_ok() {
                        return GateResult::Superseded(rx.borrow_and_update().clone());
                    }
                }
            }
        }
    }

    /// The id `content` is known by: its last target's when that was of
    /// this configuration, else the configuration's version.
    fn target_id(&self, content: &Content) -> String {
        self.target
            .as_ref()
            .filter(|t| t.config == content.digest)
            .map_or_else(|| content.digest.clone(), |t| t.id().to_owned())
    }

    /// Records that this pod's own proxy failed `content` (its reload or
    /// validation): the rollout halts here too.
    pub fn failed_here(&mut self, metrics: &Metrics, content: &Content, cause: &str) {
        let me = self.me.clone().unwrap_or_else(|| "this pod".to_owned());
        let id = self.target_id(content);
        metrics.fleet.halted(&id, &me, cause);
        self.halted = Some(id);
    }

    /// Like [`Rollout::failed_here`], when this pod's proxy recorded
    /// `content` as its last failed version.
    pub async fn failed_here_if_recorded(
        &mut self,
        own: &ProxyClient,
        metrics: &Metrics,
        content: &Content,
        cause: &str,
    ) {
        let id = self.target_id(content);
        let recorded = own
            .status()
            .await
            .ok()
            .and_then(|s| s.last_failed_version)
            .is_some_and(|f| f.version.as_str() == id);
        if recorded {
            self.failed_here(metrics, content, cause);
        }
    }

    /// What `content` is, as a rollout: when this pod's proxy runs its
    /// configuration, only referenced files can have changed, and the
    /// effective version (the files as read here) is part of the target.
    /// A watcher that reads the files differently from its proxy (they are
    /// not mounted at the same paths) falls back to the configuration
    /// alone, with a warning: gating on a version no proxy reports would
    /// hold the fleet forever.
    fn target(
        &mut self,
        own: &ConfigStatus,
        content: &Content,
        referenced: &mut Referenced,
        in_sync: Option<&str>,
    ) -> Target {
        if own.current_config_version.as_str() != content.digest {
            return Target::config(&content.digest);
        }
        referenced.set(own.files.clone());
        let seen = referenced.effective(content);
        if own.effective_version.as_str() != seen && in_sync == Some(seen.as_str()) {
            if !self.disagree_said {
                self.disagree_said = true;
                tracing::warn!(files = ?own.files, "this watcher reads the referenced files differently from its proxy (mount them at the same paths in both containers): renewed files are applied without the rollout gate");
            }
            return Target::config(&content.digest);
        }
        Target {
            config: content.digest.clone(),
            effective: Some(seen),
        }
    }

    async fn decide(
        &mut self,
        own: &ProxyClient,
        metrics: &Metrics,
        content: &Content,
        referenced: &mut Referenced,
        in_sync: Option<&str>,
    ) -> Result<(Decision, u64), String> {
        let status = match own.status().await {
            Ok(s) if !s.instance.is_empty() => s,
            Ok(_) => {
                return Err("this pod's proxy reports no instance name (run --instance)".to_owned());
            }
            Err(e) => return Err(format!("this pod's proxy: {e}")),
        };
        let target = self.target(&status, content, referenced, in_sync);
        self.target = Some(target.clone());
        if let Some(halted) = &self.halted {
            if halted == target.id() {
                return Ok((
                    Decision::Halt {
                        instance: String::new(),
                        cause: "halted earlier".to_owned(),
                    },
                    0,
                ));
            }
            metrics.fleet.cleared(target.id());
            self.halted = None;
        }
        let me = status.instance;
        self.me = Some(me.clone());
        let timeout = self.settings.gate.peer_timeout;
        let view = self
            .peers
            .poll(&me, own.base(), timeout)
            .await
            .map_err(|e| e.to_string())?;
        for peer in &view.newly_silent {
            metrics.fleet.left_out(peer);
        }
        let now = Instant::now();
        let silent = view.peers.iter().filter(|p| p.silent(now, timeout)).count();
        metrics.fleet.view(
            self.settings.slot_override.unwrap_or(view.slot),
            view.peers.len() - silent,
            silent,
        );
        let slot = self.settings.slot_override.unwrap_or(view.slot);
        let decision = gate::decide(slot, &target, &view.peers, now, &self.settings.gate);
        Ok((decision, slot))
    }
}
