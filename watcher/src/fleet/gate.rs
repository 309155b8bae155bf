//! The canary gate, as a pure function of this pod's slot, its peers'
//! statuses, the version and the clock.
//!
//! Slot 0 (the canary) applies a new version first. Slot k > 0 applies it
//! only once every live peer with a lower slot runs it, and the canary has
//! run it for the soak time while ready and without a newly failed cluster,
//! and its proxy's client-side analysis of it is no longer `running`.
//! If any live peer reports that the version failed (its reload failed, its
//! validate rejected it, its client-side check found a regression, or within
//! the soak it became unready or a cluster failed), the rollout halts: no pod
//! sends validate or reload for it. A peer
//! silent for the peer timeout is left out: a pod that is down cannot be
//! harmed by a configuration and must not stop the fleet. A peer that
//! answers with the old version holds the gate; that is the point.
//!
//! A version is a [`Target`]: the configuration's bytes, and, when only the
//! files it references changed (a renewed certificate in a Secret), the
//! effective version too, so that a renewal rolls out canary first like
//! any other change.

use std::time::{Duration, Instant};

pub use crate::target::Target;
use sluice_admin_api::{AttemptedVersion, ConfigVersion, EffectiveVersion, Verdict};

/// The gate's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// How long the canary must run a version, ready and without a newly
    /// failed cluster, before the next slots apply it.
    pub canary_soak: Duration,
    /// How long a peer may be silent before it is left out.
    pub peer_timeout: Duration,
}

/// What this watcher knows of one peer (its own pod included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The peer's instance name, as its proxy reports it.
    pub instance: String,
    /// Its slot (its instance's rank among all peers).
    pub slot: u64,
    /// When its status (below) was read; `None` if it never answered.
    pub read_at: Option<Instant>,
    /// Since when it has not answered (from the first unanswered call after
    /// its last answer, or since this watcher first asked it); `None` while
    /// it answers.
    pub silent_since: Option<Instant>,
    /// Its last status, if it ever answered.
    pub status: Option<PeerStatus>,
}

/// The part of a peer proxy's status the gate reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerStatus {
    /// The configuration version it runs.
    pub version: ConfigVersion,
    /// Its effective version (`None` from a proxy that does not report it).
    pub effective: Option<EffectiveVersion>,
    /// How long it had run that version when its status was read (on its
    /// own clock, so clocks need not agree across pods).
    pub running_for: Duration,
    /// Whether its proxy is ready.
    pub ready: bool,
    /// Clusters that failed after its version came into force (a cluster
    /// already failed before does not count).
    pub newly_failed: Vec<String>,
    /// A version that failed on it, and why.
    pub failed: Option<(AttemptedVersion, String)>,
    /// Its proxy's client-side analysis of the last version it applied
    /// (`None` from a proxy that runs none).
    pub analysis: Option<PeerAnalysis>,
    /// Its proxy started held (`run --hold`) and serves nothing yet: it runs
    /// no version, whatever its file holds.
    pub held: bool,
}

/// The part of a peer proxy's client-side analysis the gate reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerAnalysis {
    /// The version judged.
    pub version: AttemptedVersion,
    /// Where it stands.
    pub verdict: Verdict,
    /// What got worse, as a person reads it (which cluster, which step or
    /// signal, before and after).
    pub findings: Vec<String>,
    /// Whether the proxy returned to the version before by itself.
    pub reverted: bool,
}

impl PeerAnalysis {
    /// Whether it judges `target` (a proxy may name a rollout of renewed
    /// files by its configuration).
    fn judges(&self, target: &Target) -> bool {
        self.version == target.id() || self.version == target.config
    }

    /// Why the version failed the client-side check: `reason` (what the
    /// proxy recorded in `lastFailedVersion`), else the findings; and
    /// whether the proxy returned to the version before.
    pub fn cause(&self, reason: &str) -> String {
        let what = if reason.is_empty() {
            self.findings.join("; ")
        } else {
            reason.to_owned()
        };
        let mut cause = format!("client-side check failed: {what}");
        if self.reverted {
            cause.push_str(" (the proxy returned to the version before by itself)");
        }
        cause
    }
}

/// What this pod does about a version now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Its proxy runs the version already.
    Done,
    /// Validate and reload now (after stagger and jitter, for slot > 0).
    Apply,
    /// Not yet, and why.
    Wait(String),
    /// A peer failed the version: nobody sends validate or reload for it.
    Halt {
        /// The peer whose failure halted the rollout.
        instance: String,
        /// What failed.
        cause: String,
    },
}

impl Peer {
    /// Whether it has been silent for the timeout (left out of the gate). A
    /// peer that never answered counts from when this watcher first asked: it
    /// may be starting, and holds the gate until then.
    pub fn silent(&self, now: Instant, timeout: Duration) -> bool {
        self.silent_since
            .is_some_and(|since| now.saturating_duration_since(since) >= timeout)
    }

    /// How long it has run its version by `now`, counting the time since its
    /// status was read.
    fn running_for(&self, now: Instant) -> Duration {
        let (Some(status), Some(at)) = (&self.status, self.read_at) else {
            return Duration::ZERO;
        };
        status.running_for + now.saturating_duration_since(at)
    }

    /// Whether it runs `target`: the configuration, and the referenced
    /// files' contents when the target names them (a proxy too old to report
    /// its effective version is taken at its configuration's word).
    fn runs(&self, target: &Target) -> bool {
        self.status.as_ref().is_some_and(|s| {
            !s.held
                && s.version == target.config
                && target
                    .effective
                    .as_ref()
                    .is_none_or(|e| s.effective.as_ref().is_none_or(|s| s == e))
        })
    }
}

/// Why a live peer halts `target`, if it does.
fn halt_cause(peer: &Peer, target: &Target, now: Instant, soak: Duration) -> Option<String> {
    let status = peer.status.as_ref()?;
    let id = target.id();
    if let Some((_, why)) = status.failed.as_ref().filter(|(v, _)| *v == id) {
        return Some(why.clone());
    }
    // A regression its proxy found, even if a later failure of another
    // version took the place of `lastFailedVersion`.
    if let Some(a) = status
        .analysis
        .as_ref()
        .filter(|a| a.version == id && a.verdict == Verdict::Regressed)
    {
        return Some(a.cause(""));
    }
    if peer.runs(target) && peer.running_for(now) < soak {
        if !status.ready {
            return Some("the proxy became unready while running the version".to_owned());
        }
        if !status.newly_failed.is_empty() {
            return Some(format!(
                "virtual cluster(s) failed while running the version: {}",
                status.newly_failed.join(", ")
            ));
        }
    }
    None
}

/// Decides what the pod in slot `me` does about `target` (see the module
/// documentation). `peers` includes this pod's own entry.
pub fn decide(
    me: u64,
    target: &Target,
    peers: &[Peer],
    now: Instant,
    settings: &Settings,
) -> Decision {
    let live: Vec<&Peer> = peers
        .iter()
        .filter(|p| p.slot == me || !p.silent(now, settings.peer_timeout))
        .collect();
    for peer in &live {
        if let Some(cause) = halt_cause(peer, target, now, settings.canary_soak) {
            return Decision::Halt {
                instance: peer.instance.clone(),
                cause,
            };
        }
    }
    if live.iter().any(|p| p.slot == me && p.runs(target)) {
        return Decision::Done;
    }
    let mut lower: Vec<&&Peer> = live.iter().filter(|p| p.slot < me).collect();
    lower.sort_by_key(|p| p.slot);
    let Some(canary) = lower.first() else {
        // This pod is the canary (or every lower slot is silent).
        return Decision::Apply;
    };
    if let Some(behind) = lower.iter().find(|p| !p.runs(target)) {
        return Decision::Wait(format!(
            "waiting for {} (slot {}) to run the version",
            behind.instance, behind.slot
        ));
    }
    if canary.silent_since.is_some() {
        // Its soak so far proves nothing: it may have died with the version.
        return Decision::Wait(format!(
            "canary {} does not answer (left out after the peer timeout)",
            canary.instance
        ));
    }
    if canary.status.as_ref().is_some_and(|s| !s.ready) {
        return Decision::Wait(format!("canary {} is not ready", canary.instance));
    }
    let ran = canary.running_for(now);
    if ran < settings.canary_soak {
        return Decision::Wait(format!(
            "canary {} has run the version for {}s of {}s",
            canary.instance,
            ran.as_secs(),
            settings.canary_soak.as_secs()
        ));
    }
    if canary
        .status
        .as_ref()
        .and_then(|s| s.analysis.as_ref())
        .is_some_and(|a| a.verdict == Verdict::Running && a.judges(target))
    {
        return Decision::Wait(format!(
            "canary {} is analysing the version (client-side check)",
            canary.instance
        ));
    }
    Decision::Apply
}

#[cfg(test)]
mod tests;
