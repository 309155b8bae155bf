//! Waiting at the gate: poll the peers, decide, and either go, wait, or
//! halt. Replaces the per-slot delay when the watcher knows its peers.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::gate::{self, Decision};
use super::peers::{PeerSource, Peers};
use crate::client::ProxyClient;
use crate::heartbeat::Heartbeat;
use crate::metrics::Metrics;
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
    Go(Content),
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
    /// The version whose rollout is halted, if one is.
    halted: Option<String>,
    /// This pod's instance name, once its proxy said it.
    me: Option<String>,
}

impl Rollout {
    /// A rollout over the peers `settings` names.
    pub fn new(settings: FleetSettings) -> Rollout {
        let peers = Peers::new(
            settings.source.clone(),
            settings.token.clone(),
            settings.call_timeout,
        );
        Rollout {
            settings,
            peers,
            halted: None,
            me: None,
        }
    }

    /// Waits until this pod may apply `content` (see [`gate::decide`]);
    /// then, for a slot above 0, waits `stagger` plus up to `jitter` once.
    #[allow(clippy::too_many_arguments)]
    pub async fn wait(
        &mut self,
        own: &ProxyClient,
        metrics: &Metrics,
        heartbeat: &Heartbeat,
        stagger: Duration,
        jitter: Duration,
        rx: &mut watch::Receiver<Content>,
        content: Content,
    ) -> GateResult {
        if let Some(v) = &self.halted {
            if *v == content.digest {
                return GateResult::Halted {
                    instance: String::new(),
                    cause: "halted earlier".to_owned(),
                };
            }
            metrics.fleet.cleared(&content.digest);
            self.halted = None;
        }
        let mut said = String::new();
        loop {
            heartbeat.beat();
            let reason = match self.decide(own, metrics, &content.digest).await {
                Ok((Decision::Done | Decision::Apply, slot)) => {
                    if slot > 0 {
                        let delay =
                            stagger + jitter.mul_f64(schedule::random_unit().clamp(0.0, 1.0));
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
                    return GateResult::Go(content);
                }
                Ok((Decision::Halt { instance, cause }, _)) => {
                    metrics.fleet.halted(&content.digest, &instance, &cause);
                    self.halted = Some(content.digest.clone());
                    return GateResult::Halted { instance, cause };
                }
                Ok((Decision::Wait(reason), _)) => reason,
                Err(reason) => reason,
            };
            if reason != said {
                tracing::info!(version = %content.digest, %reason, "waiting at the rollout gate");
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

    /// Records that this pod's own proxy failed `version` (its reload or
    /// validation): the rollout halts here too.
    pub fn failed_here(&mut self, metrics: &Metrics, version: &str, cause: &str) {
        let me = self.me.clone().unwrap_or_else(|| "this pod".to_owned());
        metrics.fleet.halted(version, &me, cause);
        self.halted = Some(version.to_owned());
    }

    /// Like [`Rollout::failed_here`], when this pod's proxy recorded `version`
    /// as its last failed version.
    pub async fn failed_here_if_recorded(
        &mut self,
        own: &ProxyClient,
        metrics: &Metrics,
        version: &str,
        cause: &str,
    ) {
        let recorded = own
            .status()
            .await
            .ok()
            .and_then(|s| s.last_failed_version)
            .is_some_and(|f| f.version == version);
        if recorded {
            self.failed_here(metrics, version, cause);
        }
    }

    async fn decide(
        &mut self,
        own: &ProxyClient,
        metrics: &Metrics,
        version: &str,
    ) -> Result<(Decision, u64), String> {
        let me = match own.status().await {
            Ok(s) if !s.instance.is_empty() => s.instance,
            Ok(_) => {
                return Err("this pod's proxy reports no instance name (run --instance)".to_owned());
            }
            Err(e) => return Err(format!("this pod's proxy: {e}")),
        };
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
        let decision = gate::decide(slot, version, &view.peers, now, &self.settings.gate);
        Ok((decision, slot))
    }
}
