//! One reload, holding the slot: admit the bytes (stopping, preconditions,
//! validation), check the upstreams, [`plan`] it, prepare what the plan
//! names, take the analysis' baseline, then commit and start the analysis.
//! Every step that can fail comes before the commit.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use sluice_admin_api::ReloadStage;

use super::outcome::upstream_failed;
use super::plan::{Plan, Serving, Steps, plan};
use super::report::restart_required;
use super::slot::Slot;
use super::{PORT_RELEASE_TIMEOUT, Preconditions, ReloadOutcome, Source};
use crate::config::model::{StartupPolicy, VirtualCluster};
use crate::config::{FileSource, ValidConfig, diff, validate};
use crate::dataplane::listener::Closing;
use crate::dataplane::live::InPlace;
use crate::engine::{Engine, check, prepare};

/// What the prepare step made, for the commit.
struct Made<'a> {
    prepared: Vec<prepare::Prepared>,
    /// Clusters that could not start, set aside (`best-effort`).
    isolated: Vec<prepare::Failure>,
    /// What serving clusters change in place (TLS material, credentials,
    /// limits), built and checked.
    rotations: Vec<(&'a VirtualCluster, InPlace)>,
}

/// Preparing failed: `reason` may quote a file or the system's words,
/// escaped and cut as every echoed text.
fn failed(reason: String, current: &ValidConfig) -> ReloadOutcome {
    ReloadOutcome::Failed {
        reason: sluice_admin_api::echoed_within(&reason, crate::engine::MAX_REASON_CHARS),
        current: current.version.clone(),
        upstream: Vec::new(),
    }
}

impl Engine {
    pub(super) fn reload_exclusive(
        self: &Arc<Self>,
        bytes: &[u8],
        pre: Preconditions<'_>,
        start: Instant,
        slot: &Slot<'_>,
        source: Source<'_>,
    ) -> ReloadOutcome {
        let current = self.config();
        let files: &dyn FileSource = match source {
            Source::New => &*self.files,
            Source::Revert(files) => files,
        };
        let new = match self.admit(bytes, pre, &current, files) {
            Ok(new) => new,
            Err(refused) => return *refused,
        };
        let changes = diff(&current.config, &new.config);
        if let Source::New = source {
            slot.at(ReloadStage::UpstreamCheck);
            if let Err(failed) = check::upstreams(&new.config, &changes) {
                return upstream_failed(failed, current.version);
            }
        }
        let (held, known, serving) = self.serving_now();
        let now = Serving {
            known: &known,
            serving: &serving,
        };
        let steps = match plan(&changes, new.version == current.version, now) {
            Plan::Unchanged => {
                return ReloadOutcome::Unchanged {
                    restart_required: restart_required(&self.started_with, &current.config),
                    version: current.version,
                    unchanged: changes.unchanged,
                };
            }
            Plan::Apply(steps) => steps,
        };
        if let Some(reason) = expired(&current, &new, &steps) {
            return failed(reason, &current);
        }
        slot.at(ReloadStage::Prepare);
        let made = match self.prepare_steps(&held, &new, &steps, &serving) {
            Ok(made) => made,
            Err(reason) => return failed(reason, &current),
        };
        // The version in force is judged by what clients see, before it
        // goes (a return to the last good version is not judged again).
        let baseline = match source {
            Source::New => Some(self.analysis_baseline(&current, &new)),
            Source::Revert(_) => None,
        };
        slot.at(ReloadStage::Commit);
        let Some(failed) = self.commit_steps(&new, &steps, made) else {
            return ReloadOutcome::ShuttingDown {
                current: current.version.clone(),
            };
        };
        if let Some(baseline) = baseline {
            self.analysis_start(baseline, &current, &new);
        }
        ReloadOutcome::Applied {
            restart_required: restart_required(&self.started_with, &new.config),
            version: new.version.clone(),
            changes,
            duration: start.elapsed(),
            failed,
        }
    }

    /// The new configuration, if the proxy is not stopping, the
    /// preconditions hold and the bytes are valid.
    fn admit(
        &self,
        bytes: &[u8],
        pre: Preconditions<'_>,
        current: &ValidConfig,
        files: &dyn FileSource,
    ) -> Result<ValidConfig, Box<ReloadOutcome>> {
        if self.is_stopping() {
            return Err(Box::new(ReloadOutcome::ShuttingDown {
                current: current.version.clone(),
            }));
        }
        if let Some(expected) = pre.config
            && expected != current.version.as_str()
        {
            return Err(Box::new(ReloadOutcome::PreconditionFailed {
                current: current.version.clone(),
                effective: None,
            }));
        }
        let new = validate(bytes, files).map_err(|errors| {
            Box::new(ReloadOutcome::Rejected {
                version: crate::config::config_version(bytes),
                errors,
            })
        })?;
        if let Some(expected) = pre.effective
            && expected != new.referenced.effective_version.as_str()
        {
            return Err(Box::new(ReloadOutcome::PreconditionFailed {
                current: current.version.clone(),
                effective: Some(new.referenced.effective_version.clone()),
            }));
        }
        Ok(new)
    }

    /// The ports held, the clusters with a generation, and those serving.
    fn serving_now(&self) -> (HashSet<SocketAddr>, HashSet<String>, HashSet<String>) {
        let inner = self.lock();
        let known = inner.clusters.keys().cloned().collect();
        let serving = inner
            .clusters
            .iter()
            .filter(|(_, g)| g.runtime.is_some())
            .map(|(name, _)| name.clone())
            .collect();
        (prepare::held(&inner), known, serving)
    }

    /// Builds the rotations' material and every generation the plan starts;
    /// on failure releases what was prepared and says why.
    fn prepare_steps<'a>(
        &self,
        held: &HashSet<SocketAddr>,
        new: &'a ValidConfig,
        steps: &Steps,
        serving: &HashSet<String>,
    ) -> Result<Made<'a>, String> {
        // Rotations first: the new material, built now (rustls may refuse
        // it), swapped in at commit.
        let mut rotations = Vec::new();
        for name in &steps.rotate {
            let Some(c) = new.config.cluster(name) else {
                continue;
            };
            let next = InPlace::of(c)
                .map_err(|e| format!("virtual cluster {name}: new TLS material refused: {e}"))?;
            rotations.push((c, next));
        }
        let isolate = new.config.startup_policy == StartupPolicy::BestEffort;
        let mut failure = None;
        let mut isolated = Vec::new();
        let prepared = prepare::prepare_each(
            held,
            &self.next_generation,
            new.config
                .virtual_clusters
                .iter()
                .filter(|c| steps.start.iter().any(|n| n == c.name.as_str())),
            &self.metrics,
            &self.events,
            |failed| {
                if isolate && !serving.contains(&failed.name) {
                    isolated.push(failed);
                    return ControlFlow::Continue(());
                }
                failure = Some(failed);
                ControlFlow::Break(())
            },
        );
        if let Some(failed) = failure {
            let name = failed.name;
            prepare::discarded(&name, failed.generation, failed.why.clone(), &self.events);
            let reason = format!("released: virtual cluster {name} failed to prepare");
            self.discard(prepared, isolated, &reason);
            // Dropping the prepared generations closed every socket they bound.
            return Err(format!("virtual cluster {name}: {}", failed.why));
        }
        Ok(Made {
            prepared,
            isolated,
            rotations,
        })
    }

    /// Puts `new` in force with what was made (cannot fail), then drains
    /// what it replaced. Returns the clusters that could not start, or
    /// `None` when the proxy began stopping first (nothing is committed).
    fn commit_steps(
        self: &Arc<Self>,
        new: &ValidConfig,
        steps: &Steps,
        made: Made<'_>,
    ) -> Option<Vec<(String, String)>> {
        let mut inner = self.lock();
        if self.is_stopping() {
            drop(inner);
            let why = "released: the proxy is stopping";
            self.discard(made.prepared, made.isolated, why);
            return None;
        }
        let mut replaced = Vec::new();
        for p in made.prepared {
            let name = p.runtime.name().to_owned();
            if let Some(c) = new.config.cluster(&name) {
                self.expiry.set(c);
            }
            let committed =
                prepare::commit(&mut inner, p, &self.tracker, &self.events, &self.metrics);
            if let Some(old) = committed {
                replaced.push((name, old));
            }
        }
        for (c, next) in made.rotations {
            if let Some(runtime) = inner
                .clusters
                .get(c.name.as_str())
                .and_then(|g| g.runtime.as_ref())
            {
                runtime.apply_in_place(next);
                self.expiry.set(c);
                tracing::info!(cluster = %c.name, generation = runtime.generation, "applied in place (TLS material, credentials or limits): new handshakes use the material, open connections keep their sessions and take the limits at their next frame");
            }
        }
        let mut failed = Vec::new();
        for f in made.isolated {
            let record = prepare::failed(&f.name, f.generation, f.why.clone(), &self.events);
            self.expiry.forget(&f.name);
            // A failed generation it replaces is forgotten by the drain.
            if let Some(old) = inner.clusters.insert(f.name.clone(), record) {
                replaced.push((f.name.clone(), old));
            }
            tracing::warn!(cluster = %f.name, error = %f.why, "virtual cluster could not start (best-effort: the others are applied; the next reload retries it)");
            failed.push((f.name, f.why));
        }
        for name in &steps.remove {
            self.expiry.forget(name);
            if let Some(old) = inner.clusters.remove(name) {
                replaced.push((name.clone(), old));
            }
        }
        // Every SNI port's table from the generations now current (only
        // ports no cluster uses any more are closed, below).
        prepare::route_sni(&inner);
        let released = prepare::release_unused(&mut inner);
        let old_version = std::mem::replace(&mut inner.config, new.clone()).version;
        // Proxy-wide limits apply at once, without a restart.
        self.metrics
            .set_buffer_limit(new.config.limits.max_buffered_bytes);
        inner.applied_at = SystemTime::now();
        drop(inner);
        // Reply only once removed ports are free, so that whoever reloads
        // next (or starts another process) can bind them at once.
        released.into_iter().for_each(wait_released);
        self.events
            .config_in_force(Some(old_version.as_str()), new.version.as_str());
        // Drain what was replaced or removed, in the background.
        for (name, old) in replaced {
            self.drain(&name, old, new.config.drain_timeout);
        }
        Some(failed)
    }

    /// Records prepared generations (and failures set aside) that a reload
    /// does not commit; dropping them closes every socket they bound.
    fn discard(
        &self,
        prepared: Vec<prepare::Prepared>,
        isolated: Vec<prepare::Failure>,
        reason: &str,
    ) {
        for p in prepared {
            let name = p.runtime.name().to_owned();
            prepare::discarded(&name, p.runtime.generation, reason.to_owned(), &self.events);
        }
        for f in isolated {
            prepare::discarded(&f.name, f.generation, f.why, &self.events);
        }
    }
}

/// Waits (boundedly) until a port no cluster uses any more is closed.
fn wait_released(closing: Closing) {
    let addr = closing.addr();
    if closing.wait(PORT_RELEASE_TIMEOUT) {
        tracing::info!(listener = %addr, "port released");
    } else {
        tracing::warn!(listener = %addr, "port not released within {PORT_RELEASE_TIMEOUT:?}; it will be shortly");
    }
}

/// Why a cluster the plan starts or rotates cannot take its new
/// certificate (it expired), if one cannot.
fn expired(current: &ValidConfig, new: &ValidConfig, steps: &Steps) -> Option<String> {
    let now = SystemTime::now();
    new.config
        .virtual_clusters
        .iter()
        .filter(|c| {
            let name = c.name.as_str();
            steps.start.iter().chain(&steps.rotate).any(|n| n == name)
        })
        .find_map(|c| {
            let name = c.name.as_str();
            crate::certs::expired_new(current.config.cluster(name), c, now)
                .map(|why| format!("virtual cluster {name}: {why}"))
        })
}
