//! Reload: validate → diff → prepare → commit → persist → drain.
//!
//! Everything that can fail happens before anything running is touched: a
//! bad or failing configuration changes nothing. Unchanged clusters are not
//! touched at all. At most one reload runs at a time.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use sluice_admin_api::{FailureStage, UpstreamCheckFailure};

use super::status::Touched;
use super::{Engine, check, prepare};
use crate::config::{ConfigDiff, ConfigError, ConfigVersion, ProxyConfig, diff, validate};
use crate::events::ReloadResult;

/// How long a reload waits for the ports it released to be free.
const PORT_RELEASE_TIMEOUT: Duration = Duration::from_secs(1);

/// How a reload ended.
#[derive(Debug, Clone)]
pub enum ReloadOutcome {
    /// The new configuration is in force.
    Applied {
        /// Its version.
        version: ConfigVersion,
        /// What changed.
        changes: ConfigDiff,
        /// From receipt to commit.
        duration: Duration,
        /// Settings in force that take effect only at the next start.
        restart_required: Vec<String>,
    },
    /// The configuration in force was sent again (same bytes, same files).
    Unchanged {
        /// The version in force.
        version: ConfigVersion,
        /// Every cluster, all left alone.
        unchanged: Vec<String>,
        /// Settings in force that take effect only at the next start (set
        /// by an earlier reload).
        restart_required: Vec<String>,
    },
    /// The configuration is invalid; nothing was touched.
    Rejected {
        /// Version of the bytes sent.
        version: ConfigVersion,
        /// Every error.
        errors: Vec<ConfigError>,
    },
    /// `If-Match` named a version other than the one in force.
    PreconditionFailed {
        /// The version in force.
        current: ConfigVersion,
    },
    /// Preparing failed (a port taken, say), or the upstream check did;
    /// nothing was touched.
    Failed {
        /// What failed.
        reason: String,
        /// The version still in force.
        current: ConfigVersion,
        /// The upstream check's failures, per bootstrap server, if that is
        /// what failed (final for this version).
        upstream: Vec<UpstreamCheckFailure>,
    },
    /// Another reload is running.
    Busy {
        /// When it started.
        since: SystemTime,
    },
}

/// Holds the one-reload-at-a-time slot; frees it when dropped.
struct Slot<'a>(&'a Mutex<Option<SystemTime>>);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

impl Engine {
    /// Applies `bytes` as the new configuration, if `if_match` (when given)
    /// is the version in force; once applied, persists them (see
    /// [`Engine::set_persist`]).
    pub fn reload(self: &Arc<Self>, bytes: &[u8], if_match: Option<&str>) -> ReloadOutcome {
        let at = SystemTime::now();
        let start = Instant::now();
        let requested = ConfigVersion::of(bytes);
        let slot = {
            let mut running = self
                .reloading
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match *running {
                Some(since) => Err(since),
                None => {
                    *running = Some(at);
                    Ok(Slot(&self.reloading))
                }
            }
        };
        let outcome = match slot {
            Err(since) => ReloadOutcome::Busy { since },
            Ok(_slot) => {
                let outcome = self.reload_exclusive(bytes, if_match, start);
                if let (ReloadOutcome::Applied { .. }, Some(persist)) =
                    (&outcome, self.persist.get())
                {
                    persist(bytes);
                }
                outcome
            }
        };
        self.report(&outcome, at, &requested, start.elapsed());
        outcome
    }

    fn reload_exclusive(
        self: &Arc<Self>,
        bytes: &[u8],
        if_match: Option<&str>,
        start: Instant,
    ) -> ReloadOutcome {
        let current = self.config();
        if let Some(expected) = if_match
            && expected != current.version.as_str()
        {
            return ReloadOutcome::PreconditionFailed {
                current: current.version,
            };
        }
        let new = match validate(bytes, &*self.files) {
            Ok(new) => new,
            Err(errors) => {
                return ReloadOutcome::Rejected {
                    version: ConfigVersion::of(bytes),
                    errors,
                };
            }
        };
        let changes = diff(&current.config, &new.config);
        // Outside the lock: status and other reads never wait on the check.
        if let Err(failed) = check::upstreams(&new.config, &changes) {
            let reason = failed
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            let upstream = failed
                .into_iter()
                .flat_map(|f| {
                    let cluster = f.cluster;
                    f.servers
                        .into_iter()
                        .map(move |(address, cause)| UpstreamCheckFailure {
                            cluster: cluster.clone(),
                            address,
                            cause: cause.to_string(),
                        })
                })
                .collect();
            return ReloadOutcome::Failed {
                reason,
                current: current.version,
                upstream,
            };
        }
        let mut inner = self.lock();
        // Clusters whose current generation failed (best-effort startup, say)
        // are retried even when their configuration did not change.
        let retry: Vec<String> = changes
            .unchanged
            .iter()
            .filter(|n| inner.clusters.get(*n).is_some_and(|g| g.runtime.is_none()))
            .cloned()
            .collect();
        if changes.is_empty() && retry.is_empty() && new.version == current.version {
            return ReloadOutcome::Unchanged {
                restart_required: restart_required(&self.started_with, &current.config),
                version: current.version,
                unchanged: changes.unchanged,
            };
        }
        let starting = |name: &str| {
            changes.added.iter().any(|n| n == name)
                || changes.modified.iter().any(|m| m.name == name)
                || retry.iter().any(|n| n == name)
        };

        // Prepare: everything that can fail, before anything is touched.
        let mut failure = None;
        let prepared = prepare::prepare_each(
            &mut inner,
            new.config
                .virtual_clusters
                .iter()
                .filter(|c| starting(c.name.as_str())),
            &self.metrics,
            &self.events,
            |_, failed| {
                failure = Some(failed);
                ControlFlow::Break(())
            },
        );
        if let Some(failed) = failure {
            let name = failed.name;
            prepare::discarded(&name, failed.generation, failed.why.clone(), &self.events);
            for p in prepared {
                let other = p.runtime.name().to_owned();
                let reason = format!("released: virtual cluster {name} failed to prepare");
                prepare::discarded(&other, p.runtime.generation, reason, &self.events);
            }
            // Dropping the prepared generations closed every socket they bound.
            return ReloadOutcome::Failed {
                reason: format!("virtual cluster {name}: {}", failed.why),
                current: current.version,
                upstream: Vec::new(),
            };
        }

        // Commit: cannot fail.
        let mut replaced = Vec::new();
        for p in prepared {
            let name = p.runtime.name().to_owned();
            if let Some(old) = prepare::commit(&mut inner, p, &self.tracker, &self.events) {
                replaced.push((name, old));
            }
        }
        for name in &changes.removed {
            if let Some(old) = inner.clusters.remove(name) {
                replaced.push((name.clone(), old));
            }
        }
        let released = prepare::release_unused(&mut inner);
        let old_version = std::mem::replace(&mut inner.config, new.clone()).version;
        // Proxy-wide limits apply at once, without a restart.
        self.metrics
            .set_buffer_limit(new.config.limits.max_buffered_bytes);
        inner.applied_at = SystemTime::now();
        drop(inner);
        // Reply only once removed ports are free, so that whoever reloads
        // next (or starts another process) can bind them at once.
        for closing in released {
            let addr = closing.addr();
            if closing.wait(PORT_RELEASE_TIMEOUT) {
                tracing::info!(listener = %addr, "port released");
            } else {
                tracing::warn!(listener = %addr, "port not released within {PORT_RELEASE_TIMEOUT:?}; it will be shortly");
            }
        }
        self.events
            .config_in_force(Some(old_version.as_str()), new.version.as_str());

        // Drain what was replaced or removed, in the background.
        let timeout = new.config.drain_timeout;
        for (name, old) in replaced {
            self.drain(&name, old, timeout);
        }
        ReloadOutcome::Applied {
            restart_required: restart_required(&self.started_with, &new.config),
            version: new.version,
            changes,
            duration: start.elapsed(),
        }
    }

    fn report(
        &self,
        outcome: &ReloadOutcome,
        at: SystemTime,
        requested: &ConfigVersion,
        took: Duration,
    ) {
        let version = requested.to_string();
        let (result, modified, error) = match outcome {
            ReloadOutcome::Applied { changes, .. } => {
                let touched = Touched {
                    added: changes.added.clone(),
                    modified: changes.modified.iter().map(|m| m.name.clone()).collect(),
                    removed: changes.removed.clone(),
                };
                (ReloadResult::Applied, touched, None)
            }
            ReloadOutcome::Unchanged { .. } => (ReloadResult::Unchanged, Touched::default(), None),
            ReloadOutcome::Rejected { errors, .. } => (
                ReloadResult::Rejected,
                Touched::default(),
                Some(format!("configuration invalid: {} errors", errors.len())),
            ),
            ReloadOutcome::PreconditionFailed { current } => (
                ReloadResult::PreconditionFailed,
                Touched::default(),
                Some(format!(
                    "If-Match does not match the version in force ({current})"
                )),
            ),
            ReloadOutcome::Failed { reason, .. } => (
                ReloadResult::Failed,
                Touched::default(),
                Some(reason.clone()),
            ),
            ReloadOutcome::Busy { .. } => (
                ReloadResult::Conflict,
                Touched::default(),
                Some("another reload is in progress".to_owned()),
            ),
        };
        let detail = match outcome {
            ReloadOutcome::Applied { changes, .. } => format!(
                "{} added, {} removed, {} modified, {} unchanged",
                changes.added.len(),
                changes.removed.len(),
                changes.modified.len(),
                changes.unchanged.len()
            ),
            _ => error.clone().unwrap_or_default(),
        };
        // The status is recorded before the event is logged, so whoever sees
        // the log line finds the attempt in `/admin/config/status`. A refused
        // concurrent attempt does not overwrite the running one's record.
        if result != ReloadResult::Conflict {
            let stage = match outcome {
                ReloadOutcome::Rejected { .. } => Some(FailureStage::Validate),
                ReloadOutcome::Failed { upstream, .. } if !upstream.is_empty() => {
                    Some(FailureStage::UpstreamCheck)
                }
                ReloadOutcome::Failed { .. } => Some(FailureStage::Reload),
                _ => None,
            };
            if let (Some(stage), Some(reason)) = (stage, &error) {
                self.record_failure(version.clone(), stage, reason.clone());
            }
            self.record_reload(at, result, version.clone(), took, modified, error);
        }
        self.events.reload(result, &version, took, &detail);
    }
}

/// Proxy-wide settings of `now` (in force) that the process, started with
/// `started`, cannot apply live.
fn restart_required(started: &ProxyConfig, now: &ProxyConfig) -> Vec<String> {
    let mut out = Vec::new();
    if started.admin.listen != now.admin.listen {
        out.push(format!(
            "admin.listen changed from {} to {}: the admin API keeps listening on {} until the proxy restarts",
            started.admin.listen, now.admin.listen, started.admin.listen
        ));
    }
    out
}
