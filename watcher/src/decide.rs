//! The watcher's next step, as a pure function of what it observed and what
//! it remembers: no sockets, files or clocks. The effect code (`run`,
//! `run::apply`, `fleet::rollout`) observes (the content's versions and the
//! effective version as this watcher reads the files, what woke it, its
//! proxy's status read once for this step, the proxy's validation), calls
//! [`decide`], acts on the [`Step`], and remembers ([`Memory::remember`]).
//!
//! "Does my proxy already run this?" is answered here only ([`runs`]), for
//! the gate's target and for the apply alike.

use sluice_admin_api::{
    AttemptedVersion, ConfigStatus, ConfigVersion, EffectiveVersion, FailureStage,
};

use crate::target::Target;

/// What woke the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The watcher started: reconcile at once.
    Start,
    /// The configuration changed.
    Config,
    /// A file it references changed.
    Files,
    /// The periodic resync.
    Resync,
}

impl Trigger {
    /// Whether new content waits this pod's turn (a start or a resync
    /// reconciles at once).
    pub fn staggered(self) -> bool {
        matches!(self, Trigger::Config | Trigger::Files)
    }
}

/// A readable content's versions, as this watcher reads it and the files it
/// references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The configuration's bytes.
    pub config: ConfigVersion,
    /// The configuration and the referenced files as read here.
    pub effective: EffectiveVersion,
}

/// What its proxy runs, from one status read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    /// The configuration in force.
    pub config: ConfigVersion,
    /// The configuration in force and its files as the proxy loaded them.
    pub effective: EffectiveVersion,
    /// A version its client-side check failed, which it returned from by
    /// itself (its `lastFailedVersion` with stage `client_check`): sending
    /// it again would break its clients again for the analysis window.
    pub returned_from: Option<AttemptedVersion>,
}

impl Proxy {
    /// What `status` says it runs.
    pub fn of(status: &ConfigStatus) -> Proxy {
        Proxy {
            config: status.current_config_version.clone(),
            effective: status.effective_version.clone(),
            returned_from: status
                .last_failed_version
                .as_ref()
                .filter(|f| f.stage == FailureStage::ClientCheck)
                .map(|f| f.version.clone()),
        }
    }

    /// Whether it returned from `seen` (its configuration, or these files).
    fn returned_from(&self, seen: &Seen) -> bool {
        self.returned_from
            .as_ref()
            .is_some_and(|v| *v == seen.config || *v == seen.effective)
    }
}

/// The proxy's validation of the content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validated {
    /// Whether it found the content valid.
    pub valid: bool,
    /// The effective version as the proxy read the files to validate it.
    pub read: EffectiveVersion,
}

/// Where the watcher is with one content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Just woke, nothing done yet.
    Woke {
        /// Why.
        trigger: Trigger,
        /// Whether the watcher knows peers (the rollout gate is on).
        peers: bool,
    },
    /// Waiting at the rollout gate.
    AtGate,
    /// Past its turn (the gate opened, the delay ran, or none applied).
    Past {
        /// For a rollout of referenced files only, the effective version the
        /// gate opened for.
        gated: Option<EffectiveVersion>,
    },
}

/// What the watcher observed for one step.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// Where it is.
    pub stage: &'a Stage,
    /// The content's versions; `None`: the file cannot be read.
    pub seen: Option<&'a Seen>,
    /// Its proxy's status, read once for this step; `None`: not read.
    pub proxy: Option<&'a Proxy>,
    /// The proxy's validation of the content; `None`: not asked.
    pub validated: Option<&'a Validated>,
}

/// What the watcher remembers between passes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    /// The effective version (as seen here) last rejected.
    pub rejected: Option<EffectiveVersion>,
    /// The effective version (as seen here) last brought in sync with the
    /// proxy: what the proxy was found to run, not files read afterwards.
    pub in_sync: Option<EffectiveVersion>,
    /// The version whose rollout is halted, if one is.
    pub halted: Option<AttemptedVersion>,
    /// The target last waited for at the gate.
    pub target: Option<Target>,
}

/// How far its proxy runs the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Another configuration.
    Other,
    /// This configuration, with referenced files other than those seen here.
    OtherFiles,
    /// This configuration and these files.
    This,
    /// This configuration, and files as last brought in sync: this watcher
    /// reads them differently from its proxy (not mounted alike).
    ThisAsInSync,
}

/// Does its proxy already run this? (The one place that says.)
pub fn runs(proxy: &Proxy, seen: &Seen, in_sync: Option<&EffectiveVersion>) -> Runs {
    if proxy.config != seen.config {
        Runs::Other
    } else if proxy.effective == seen.effective {
        Runs::This
    } else if in_sync == Some(&seen.effective) {
        Runs::ThisAsInSync
    } else {
        Runs::OtherFiles
    }
}

/// What the watcher does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The file cannot be read: nothing to send.
    Unreadable,
    /// Rejected before and nothing it is made of changed (a resync tries it
    /// again: a file it lacked may have appeared): nothing to do.
    StillRejected,
    /// A referenced file changed, to the files in sync: nothing to do.
    InSync,
    /// Wait this pod's delay (no peers), then go on.
    WaitTurn,
    /// Go to the rollout gate (peers; at start too: a restarted watcher
    /// re-derives a halt from its peers).
    ToGate,
    /// Read its proxy's status.
    AskProxy,
    /// Ask the peers whether the gate is open for `target`.
    Gate {
        /// What the rollout is of.
        target: Target,
        /// A halt of another version is over.
        clears_halt: bool,
        /// This watcher reads the files differently from its proxy: the
        /// rollout is of the configuration alone (renewed files go
        /// ungated; gating on a version no proxy reports would hold the
        /// fleet forever).
        reads_differently: bool,
    },
    /// `target` was halted earlier: nobody applies it.
    HaltedEarlier {
        /// What the rollout is of.
        target: Target,
    },
    /// Its proxy runs it: remember it in sync.
    Unchanged,
    /// The referenced files changed since the gate opened for them: not
    /// what the peers ran; back to the gate, nothing sent.
    Regate,
    /// Its proxy's client-side check failed it and the proxy returned from
    /// it: never sent again (as if rejected) until the content changes.
    ReturnedFrom,
    /// Ask its proxy to validate it.
    Validate,
    /// The proxy found it invalid: remember it rejected.
    Rejected,
    /// Reload on top of the version in force.
    Reload {
        /// `If-Match`.
        if_match: ConfigVersion,
        /// `If-Effective-Match`, for a rollout of files only: the files as
        /// the proxy validated them (a change since answers 412).
        if_effective: Option<EffectiveVersion>,
    },
}

/// The next step (see the module documentation and `docs/watcher.md`).
pub fn decide(observed: &Observed<'_>, memory: &Memory) -> Step {
    let Some(seen) = observed.seen else {
        return Step::Unreadable;
    };
    match observed.stage {
        Stage::Woke { trigger, peers } => {
            if *trigger != Trigger::Resync && memory.rejected.as_ref() == Some(&seen.effective) {
                Step::StillRejected
            } else if *trigger == Trigger::Files && memory.in_sync.as_ref() == Some(&seen.effective)
            {
                Step::InSync
            } else if *peers {
                Step::ToGate
            } else if trigger.staggered() {
                Step::WaitTurn
            } else {
                Step::AskProxy
            }
        }
        Stage::AtGate => match observed.proxy {
            None => Step::AskProxy,
            Some(proxy) => at_gate(proxy, seen, memory),
        },
        Stage::Past { gated } => match (observed.proxy, observed.validated) {
            (None, _) => Step::AskProxy,
            (Some(proxy), None) => match runs(proxy, seen, memory.in_sync.as_ref()) {
                Runs::This | Runs::ThisAsInSync => Step::Unchanged,
                _ if proxy.returned_from(seen) => Step::ReturnedFrom,
                Runs::OtherFiles if gated.as_ref().is_some_and(|g| *g != seen.effective) => {
                    Step::Regate
                }
                Runs::OtherFiles | Runs::Other => Step::Validate,
            },
            (Some(_), Some(v)) if !v.valid => Step::Rejected,
            (Some(proxy), Some(v)) => {
                let files_only = proxy.config == seen.config && gated.is_some();
                Step::Reload {
                    if_match: proxy.config.clone(),
                    if_effective: files_only.then(|| v.read.clone()),
                }
            }
        },
    }
}

/// At the gate: what the rollout is of, and whether it is halted.
fn at_gate(proxy: &Proxy, seen: &Seen, memory: &Memory) -> Step {
    let runs = runs(proxy, seen, memory.in_sync.as_ref());
    let target = match runs {
        Runs::Other | Runs::ThisAsInSync => Target::config(&seen.config),
        Runs::This | Runs::OtherFiles => Target {
            config: seen.config.clone(),
            effective: Some(seen.effective.clone()),
        },
    };
    if memory.halted.as_ref() == Some(&target.id()) {
        return Step::HaltedEarlier { target };
    }
    Step::Gate {
        target,
        clears_halt: memory.halted.is_some(),
        reads_differently: runs == Runs::ThisAsInSync,
    }
}

/// How applying one content ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The proxy now runs it.
    Applied,
    /// The proxy already ran it.
    Unchanged,
    /// The proxy found it invalid.
    Rejected(Vec<String>),
    /// Retries ran out, or the proxy refused for good.
    Failed(String),
    /// Newer content arrived first.
    Superseded,
    /// The referenced files changed after the rollout gate opened for them:
    /// back to the gate with what is there now.
    Regate,
}

impl Memory {
    /// Remembers how applying a content ended; `about` is the effective
    /// version (as seen here) the proxy's answer is about (the files as read
    /// when the proxy ran or validated them). Returns `false` for a
    /// rejection already remembered (at a resync): nothing new to report.
    pub fn remember(&mut self, outcome: &Outcome, about: Option<EffectiveVersion>) -> bool {
        match outcome {
            Outcome::Applied | Outcome::Unchanged => {
                self.rejected = None;
                if about.is_some() {
                    self.in_sync = about;
                }
                true
            }
            Outcome::Rejected(_) if about.is_some() && self.rejected == about => false,
            Outcome::Rejected(_) => {
                if about.is_some() {
                    self.rejected = about;
                }
                true
            }
            Outcome::Failed(_) | Outcome::Superseded | Outcome::Regate => true,
        }
    }

    /// The version a failure of `config` is recorded under: the last
    /// target's id when it was of this configuration (the effective version
    /// for a rollout of files), else the configuration's.
    pub fn attempted(&self, config: &ConfigVersion) -> AttemptedVersion {
        self.target
            .as_ref()
            .filter(|t| t.config == *config)
            .map_or_else(|| config.clone().into(), Target::id)
    }

    /// Whether the failure its proxy recorded (`failed`) is of `config`, as
    /// [`Memory::attempted`] names it.
    pub fn recorded(&self, failed: Option<&AttemptedVersion>, config: &ConfigVersion) -> bool {
        failed.is_some_and(|f| *f == self.attempted(config))
    }
}

#[cfg(test)]
mod tests;
