//! Reload: validate → diff → upstream check → prepare → commit → persist →
//! drain.
//!
//! Everything that can fail happens before anything running is touched: a
//! bad or failing configuration changes nothing. Unchanged clusters are not
//! touched at all. At most one reload runs at a time, and no lock is held
//! while it validates, checks upstreams or prepares: admin reads see the
//! state before or after it, never wait for it. Under `startupPolicy:
//! best-effort`, a cluster that is not serving (added, or failed before) and
//! cannot start is recorded as failed instead of failing the reload.

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use sluice_admin_api::ReloadStage;

use super::{Engine, check, prepare};
use crate::config::model::StartupPolicy;
use crate::config::{diff, validate};
use crate::dataplane::cluster::Tls;

mod outcome;
mod report;
mod slot;

use outcome::upstream_failed;
pub use outcome::{Preconditions, ReloadOutcome};
use report::restart_required;
use slot::Slot;

/// How long a reload waits for the ports it released to be free.
const PORT_RELEASE_TIMEOUT: Duration = Duration::from_secs(1);

impl Engine {
    fn running(&self) -> std::sync::MutexGuard<'_, Option<(SystemTime, ReloadStage)>> {
        self.reloading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `bytes` as the new configuration, if `if_match` (when given)
    /// is the version in force; once applied, persists them (see
    /// [`Engine::set_persist`]) before answering.
    pub fn reload(self: &Arc<Self>, bytes: &[u8], if_match: Option<&str>) -> ReloadOutcome {
        let pre = Preconditions {
            config: if_match,
            effective: None,
        };
        self.reload_if(bytes, pre)
    }

    /// Like [`Engine::reload`], under every precondition `pre` names.
    pub fn reload_if(self: &Arc<Self>, bytes: &[u8], pre: Preconditions<'_>) -> ReloadOutcome {
        match self.reload_with(
            || Ok::<_, std::convert::Infallible>(Cow::Borrowed(bytes)),
            pre,
        ) {
            Ok(outcome) => outcome,
            Err(never) => match never {},
        }
    }

    /// Like [`Engine::reload`] with the bytes `read` returns, read only once
    /// this reload holds the slot: a SIGHUP reads the file after any reload
    /// before it has applied (and persisted), so it can never apply older
    /// bytes over a newer reload. A failed read changes nothing.
    pub fn reload_reading<E>(
        self: &Arc<Self>,
        read: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<ReloadOutcome, E> {
        self.reload_with(|| read().map(Cow::Owned), Preconditions::default())
    }

    fn reload_with<'b, E>(
        self: &Arc<Self>,
        read: impl FnOnce() -> Result<Cow<'b, [u8]>, E>,
        pre: Preconditions<'_>,
    ) -> Result<ReloadOutcome, E> {
        let at = SystemTime::now();
        let start = Instant::now();
        let slot = {
            let mut running = self.running();
            match *running {
                Some((since, _)) => Err(since),
                None => {
                    *running = Some((at, ReloadStage::Validate));
                    Ok(Slot(self))
                }
            }
        };
        let (outcome, requested) = match slot {
            Err(since) => (ReloadOutcome::Busy { since }, None),
            Ok(slot) => {
                let bytes = read()?;
                let outcome = self.reload_exclusive(&bytes, pre, start, &slot);
                if let (ReloadOutcome::Applied { .. }, Some(persist)) =
                    (&outcome, self.persist.get())
                {
                    slot.at(ReloadStage::Persist);
                    persist(&bytes);
                }
                let failed = matches!(
                    outcome,
                    ReloadOutcome::Rejected { .. } | ReloadOutcome::Failed { .. }
                );
                (outcome, Some(self.attempted(&bytes, failed)))
            }
        };
        self.report(&outcome, at, requested.as_ref(), start.elapsed());
        Ok(outcome)
    }

    /// Waits until no reload runs (at once when none does), for a caller
    /// refused with [`ReloadOutcome::Busy`] that must not give up: a SIGHUP.
    pub async fn reload_slot_free(&self) {
        let ended = self.reload_ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        if self.running().is_some() {
            ended.await;
        }
    }

    fn reload_exclusive(
        self: &Arc<Self>,
        bytes: &[u8],
        pre: Preconditions<'_>,
        start: Instant,
        slot: &Slot<'_>,
    ) -> ReloadOutcome {
        let current = self.config();
        if self.is_stopping() {
            return ReloadOutcome::ShuttingDown {
                current: current.version,
            };
        }
        if let Some(expected) = pre.config
            && expected != current.version.as_str()
        {
            return ReloadOutcome::PreconditionFailed {
                current: current.version,
                effective: None,
            };
        }
        let new = match validate(bytes, &*self.files) {
            Ok(new) => new,
            Err(errors) => {
                return ReloadOutcome::Rejected {
                    version: crate::config::config_version(bytes),
                    errors,
                };
            }
        };
        if let Some(expected) = pre.effective
            && expected != new.referenced.effective_version.as_str()
        {
            return ReloadOutcome::PreconditionFailed {
                current: current.version,
                effective: Some(new.referenced.effective_version.clone()),
            };
        }
        let changes = diff(&current.config, &new.config);
        slot.at(ReloadStage::UpstreamCheck);
        if let Err(failed) = check::upstreams(&new.config, &changes) {
            return upstream_failed(failed, current.version);
        }
        let (held, serving, retry) = {
            let inner = self.lock();
            let serving: HashSet<String> = inner
                .clusters
                .iter()
                .filter(|(_, g)| g.runtime.is_some())
                .map(|(name, _)| name.clone())
                .collect();
            // Clusters whose current generation failed (best-effort, say)
            // are retried even when their configuration did not change.
            let retry: Vec<String> = changes
                .unchanged
                .iter()
                .filter(|n| inner.clusters.contains_key(*n) && !serving.contains(*n))
                .cloned()
                .collect();
            (prepare::held(&inner), serving, retry)
        };
        if changes.is_empty() && retry.is_empty() && new.version == current.version {
            return ReloadOutcome::Unchanged {
                restart_required: restart_required(&self.started_with, &current.config),
                version: current.version,
                unchanged: changes.unchanged,
            };
        }
        // A serving cluster whose only change is TLS material keeps its
        // generation: the material is swapped in at commit. One that is not
        // serving starts a generation, as a retry does.
        let rotating: Vec<&str> = changes
            .rotated
            .iter()
            .map(|m| m.name.as_str())
            .filter(|n| serving.contains(*n))
            .collect();
        let starting = |name: &str| {
            changes.added.iter().any(|n| n == name)
                || changes.modified.iter().any(|m| m.name == name)
                || changes
                    .rotated
                    .iter()
                    .any(|m| m.name == name && !rotating.contains(&name))
                || retry.iter().any(|n| n == name)
        };
        let now = SystemTime::now();
        for c in new.config.virtual_clusters.iter() {
            let name = c.name.as_str();
            if !starting(name) && !rotating.contains(&name) {
                continue;
            }
            if let Some(why) = crate::certs::expired_new(current.config.cluster(name), c, now) {
                return ReloadOutcome::Failed {
                    reason: format!("virtual cluster {name}: {why}"),
                    current: current.version,
                    upstream: Vec::new(),
                };
            }
        }

        // Prepare: everything that can fail, before anything is touched.
        slot.at(ReloadStage::Prepare);
        // Rotations first: the new material, built now (rustls may refuse
        // it), swapped in at commit.
        let mut rotations = Vec::new();
        for name in &rotating {
            let Some(c) = new.config.cluster(name) else {
                continue;
            };
            match Tls::of(c) {
                Ok(tls) => rotations.push((c, tls)),
                Err(e) => {
                    return ReloadOutcome::Failed {
                        reason: format!("virtual cluster {name}: new TLS material refused: {e}"),
                        current: current.version,
                        upstream: Vec::new(),
                    };
                }
            }
        }
        let isolate = new.config.startup_policy == StartupPolicy::BestEffort;
        let mut failure = None;
        let mut isolated = Vec::new();
        let prepared = prepare::prepare_each(
            &held,
            &self.next_generation,
            new.config
                .virtual_clusters
                .iter()
                .filter(|c| starting(c.name.as_str())),
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
            return ReloadOutcome::Failed {
                reason: format!("virtual cluster {name}: {}", failed.why),
                current: current.version,
                upstream: Vec::new(),
            };
        }

        // Commit: cannot fail.
        slot.at(ReloadStage::Commit);
        let mut inner = self.lock();
        if self.is_stopping() {
            drop(inner);
            self.discard(prepared, isolated, "released: the proxy is stopping");
            return ReloadOutcome::ShuttingDown {
                current: current.version,
            };
        }
        let mut replaced = Vec::new();
        for p in prepared {
            let name = p.runtime.name().to_owned();
            if let Some(c) = new
                .config
                .virtual_clusters
                .iter()
                .find(|c| c.name.as_str() == name)
            {
                self.expiry.set(c);
            }
            let committed =
                prepare::commit(&mut inner, p, &self.tracker, &self.events, &self.metrics);
            if let Some(old) = committed {
                replaced.push((name, old));
            }
        }
        for (c, tls) in rotations {
            if let Some(runtime) = inner
                .clusters
                .get(c.name.as_str())
                .and_then(|g| g.runtime.as_ref())
            {
                runtime.rotate(tls);
                self.expiry.set(c);
                tracing::info!(cluster = %c.name, generation = runtime.generation, "TLS material rotated in place: new handshakes use it, connections stay");
            }
        }
        let mut failed = Vec::new();
        for f in isolated {
            let record = prepare::failed(&f.name, f.generation, f.why.clone(), &self.events);
            self.expiry.forget(&f.name);
            // A failed generation it replaces is forgotten by the drain.
            if let Some(old) = inner.clusters.insert(f.name.clone(), record) {
                replaced.push((f.name.clone(), old));
            }
            tracing::warn!(cluster = %f.name, error = %f.why, "virtual cluster could not start (best-effort: the others are applied; the next reload retries it)");
            failed.push((f.name, f.why));
        }
        for name in &changes.removed {
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
            failed,
        }
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
