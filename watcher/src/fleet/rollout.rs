//! Waiting at the gate: poll the peers, decide, and either go, wait, or
//! halt. Replaces the per-slot delay when the watcher knows its peers.
//! What the rollout is of, and whether it was halted earlier, is
//! [`decide`]'s; the halt is remembered in the loop's [`Memory`].

use std::time::{Duration, Instant};

use tokio::sync::watch;

use sluice_admin_api::{ConfigVersion, EffectiveVersion};

use super::gate::{self, Decision};
use super::peers::{PeerSource, Peers};
use crate::client::ProxyClient;
use crate::decide::{Memory, Observed, Proxy, Stage, Step, decide};
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
    /// The scheme and CA the peers' admin APIs are reached with.
    pub tls: crate::tls::ProxyTls,
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
        effective: Option<EffectiveVersion>,
    },
    /// A peer failed this version: nobody applies it.
    Halted {
        /// The peer that failed it (empty: halted earlier).
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
    /// This pod's instance name, once its proxy said it.
    me: Option<String>,
    /// Whether this watcher and its proxy were seen to read the referenced
    /// files differently (said once).
    disagree_said: bool,
}

impl Rollout {
    /// A rollout over the peers `settings` names; slots above 0 wait
    /// `stagger` plus up to `jitter` once the gate opens.
    pub fn new(settings: FleetSettings, stagger: Duration, jitter: Duration) -> Rollout {
        let peers = Peers::new(
            settings.source.clone(),
            settings.token.clone(),
            settings.tls.clone(),
            settings.call_timeout,
        );
        Rollout {
            settings,
            peers,
            stagger,
            jitter,
            me: None,
            disagree_said: false,
        }
    }

    /// Waits until this pod may apply `content` (see [`gate::decide`]);
    /// then, for a slot above 0, waits the stagger plus up to the jitter
    /// once. When this pod's proxy runs `content`'s configuration already,
    /// the rollout is of the referenced files as `referenced` reads them.
    /// The target and a halt are remembered in `memory`.
    #[allow(clippy::too_many_arguments)]
    pub async fn wait(
        &mut self,
        own: &ProxyClient,
        metrics: &Metrics,
        heartbeat: &Heartbeat,
        rx: &mut watch::Receiver<Content>,
        content: Content,
        referenced: &mut Referenced,
        memory: &mut Memory,
    ) -> GateResult {
        let Some(config) = content.digest.clone() else {
            // Unreadable content never comes here: there is nothing to send.
            return GateResult::Halted {
                instance: String::new(),
                cause: "the file cannot be read".to_owned(),
            };
        };
        let mut said = String::new();
        loop {
            heartbeat.beat();
            let reason = match self
                .decide(own, metrics, &content, referenced, memory)
                .await
            {
                Ok((Decision::Done | Decision::Apply, slot)) => {
                    if let Err(newer) = self.stagger(slot, heartbeat, rx).await {
                        return GateResult::Superseded(newer);
                    }
                    let effective = memory.target.as_ref().and_then(|t| t.effective.clone());
                    return GateResult::Go { content, effective };
                }
                Ok((Decision::Halt { instance, cause }, _)) => {
                    let id = memory.attempted(&config);
                    if !instance.is_empty() {
                        metrics.fleet.halted(id.as_str(), &instance, &cause);
                    }
                    memory.halted = Some(id);
                    return GateResult::Halted { instance, cause };
                }
                Ok((Decision::Wait(reason), _)) | Err(reason) => reason,
            };
            if reason != said {
                let id = memory.attempted(&config);
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

    /// Once the gate opened: for a slot above 0, the stagger plus up to the
    /// jitter; newer content cuts it short (returned).
    async fn stagger(
        &self,
        slot: u64,
        heartbeat: &Heartbeat,
        rx: &mut watch::Receiver<Content>,
    ) -> Result<(), Content> {
        if slot == 0 {
            return Ok(());
        }
        let delay = self.stagger + self.jitter.mul_f64(schedule::random_unit().clamp(0.0, 1.0));
        if delay.is_zero() {
            return Ok(());
        }
        tracing::info!(
            slot,
            delay_ms = delay.as_millis() as u64,
            "gate open; waiting the stagger"
        );
        // Waiting is progress: liveness must not restart a watcher that
        // waits its stagger.
        tokio::select! {
            () = heartbeat.beating_while(tokio::time::sleep(delay)) => Ok(()),
            _ = rx.changed() => Err(rx.borrow_and_update().clone()),
        }
    }

    /// How often the peers (and this pod's proxy) are asked while waiting.
    pub fn poll(&self) -> Duration {
        self.settings.poll
    }

    /// Records that this pod's own proxy failed the configuration `config`
    /// (its reload or validation): the rollout halts here too.
    pub fn failed_here(
        &mut self,
        metrics: &Metrics,
        memory: &mut Memory,
        config: &ConfigVersion,
        cause: &str,
    ) {
        let me = self.me.clone().unwrap_or_else(|| "this pod".to_owned());
        let id = memory.attempted(config);
        metrics.fleet.halted(id.as_str(), &me, cause);
        memory.halted = Some(id);
    }

    /// Like [`Rollout::failed_here`], when this pod's proxy recorded
    /// `config` (as [`Memory::attempted`] names it) as its last failed
    /// version.
    pub async fn failed_here_if_recorded(
        &mut self,
        own: &ProxyClient,
        metrics: &Metrics,
        memory: &mut Memory,
        config: &ConfigVersion,
        cause: &str,
    ) {
        let failed = own.status().await.ok().and_then(|s| s.last_failed_version);
        if memory.recorded(failed.as_ref().map(|f| &f.version), config) {
            self.failed_here(metrics, memory, config, cause);
        }
    }

    /// Observes (its proxy's status once, the files as read here), decides
    /// what the rollout is of and whether it was halted, then asks the
    /// peers and the gate.
    async fn decide(
        &mut self,
        own: &ProxyClient,
        metrics: &Metrics,
        content: &Content,
        referenced: &mut Referenced,
        memory: &mut Memory,
    ) -> Result<(Decision, u64), String> {
        let status = match own.status().await {
            Ok(s) if !s.instance.is_empty() => s,
            Ok(_) => {
                return Err("this pod's proxy reports no instance name (run --instance)".to_owned());
            }
            Err(e) => return Err(format!("this pod's proxy: {e}")),
        };
        if content.digest.as_ref() == Some(&status.current_config_version) {
            referenced.set(status.files.clone());
        }
        let proxy = Proxy::of(&status);
        let seen = referenced.seen(content);
        let observed = Observed {
            stage: &Stage::AtGate,
            seen: seen.as_ref(),
            proxy: Some(&proxy),
            validated: None,
        };
        let target = match decide(&observed, memory) {
            Step::Gate {
                target,
                clears_halt,
                reads_differently,
            } => {
                if reads_differently && !self.disagree_said {
                    self.disagree_said = true;
                    tracing::warn!(files = ?status.files, "this watcher reads the referenced files differently from its proxy (mount them at the same paths in both containers): renewed files are applied without the rollout gate");
                }
                if clears_halt {
                    metrics.fleet.cleared(target.id().as_str());
                    memory.halted = None;
                }
                target
            }
            Step::HaltedEarlier { target } => {
                memory.target = Some(target);
                let halt = Decision::Halt {
                    instance: String::new(),
                    cause: "halted earlier".to_owned(),
                };
                return Ok((halt, 0));
            }
            other => return Err(format!("no target at the gate: {other:?}")),
        };
        memory.target = Some(target.clone());
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
        let slot = self.settings.slot_override.unwrap_or(view.slot);
        metrics.fleet.view(slot, view.peers.len() - silent, silent);
        let decision = gate::decide(slot, &target, &view.peers, now, &self.settings.gate);
        Ok((decision, slot))
    }
}
