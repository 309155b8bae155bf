//! The fleet's notable events, each one function that logs it and counts
//! it: this pod's slot, peers left out of the gate, a rollout halted and
//! cleared.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

/// The fleet's metrics.
#[derive(Debug, Default)]
pub struct FleetMetrics {
    halted: Gauge,
    slot: Gauge,
    peers: Family<StateLabel, Gauge>,
    left_out: Counter,
}

impl FleetMetrics {
    /// Registers every fleet metric (under the watcher's prefix).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "rollout_halted",
            "1 while a peer's failure halts the rollout of the newest version (no pod applies it), else 0",
            self.halted.clone(),
        );
        registry.register(
            "slot",
            "This pod's slot in the rollout order (0 is the canary; -1 until known)",
            self.slot.clone(),
        );
        registry.register(
            "peers",
            "Peers by state: live (answered within --peer-timeout) or silent (left out of the gate)",
            self.peers.clone(),
        );
        registry.register(
            "peers_left_out",
            "Times a peer was left out of the gate after --peer-timeout of silence",
            self.left_out.clone(),
        );
        self.slot.set(-1);
    }

    /// This pod's slot, and how many peers are live and silent.
    pub fn view(&self, slot: u64, live: usize, silent: usize) {
        self.slot.set(i64::try_from(slot).unwrap_or(i64::MAX));
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.peers
            .get_or_create(&StateLabel { state: "live" })
            .set(count(live));
        self.peers
            .get_or_create(&StateLabel { state: "silent" })
            .set(count(silent));
    }

    /// A peer is left out of the gate: silent for the peer timeout.
    pub fn left_out(&self, peer: &str) {
        self.left_out.inc();
        tracing::warn!(
            peer,
            "peer silent for --peer-timeout: left out of the rollout gate (a pod that is down cannot be harmed)"
        );
    }

    /// The rollout of `version` halts because `instance` failed it.
    pub fn halted(&self, version: &str, instance: &str, cause: &str) {
        if self.halted.get() == 0 {
            tracing::error!(
                version,
                pod = instance,
                cause,
                "rollout halted: no pod applies this version; revert or fix the ConfigMap"
            );
        }
        self.halted.set(1);
    }

    /// A newer version clears the halt.
    pub fn cleared(&self, version: &str) {
        if self.halted.get() != 0 {
            tracing::info!(version, "newer configuration: the halt is cleared");
        }
        self.halted.set(0);
    }

    /// Whether a rollout is halted.
    pub fn is_halted(&self) -> bool {
        self.halted.get() != 0
    }
}
