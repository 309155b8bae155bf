//! The loop that keeps the self-signed certificates current: read the
//! Secret, make sure the caBundle is published, carry out the step
//! [`plan`] says is due (writing the Secret under optimistic concurrency),
//! serve what the Secret holds, and sleep until the next step is due.
//! Every replica runs it; a replica that loses a write race (409) reads
//! the winner's certificates and serves those. A failing API server is
//! logged and retried with backoff; the certificate in use stays.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use super::Settings;
use super::api::{ApiError, Objects, Publication, StoredSecret};
use super::material::{Material, MaterialError};
use super::plan::{Step, View, next_check, plan};
use crate::metrics::Metrics;
use crate::tls::{CertResolver, parse};

/// How often the Secret is read even when nothing is due: other replicas
/// and people change it too.
const RESYNC: Duration = Duration::from_secs(60);
/// Writes lost to other replicas in a row before the cycle gives up (and
/// retries after a backoff).
const MAX_CONFLICTS: usize = 5;

/// Why one pass failed; the next one comes after a backoff.
#[derive(Debug, thiserror::Error)]
enum CycleError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(transparent)]
    Material(#[from] MaterialError),
    #[error("the Secret was written by someone else {MAX_CONFLICTS} times in a row")]
    Contended,
    #[error("the API server did not answer within {0:?}")]
    TimedOut(Duration),
}

/// Keeps one webhook's certificates current.
#[derive(Debug)]
pub struct Controller {
    settings: Settings,
    objects: Objects,
    metrics: Arc<Metrics>,
    resolver: Option<Arc<CertResolver>>,
    /// The serving certificate (PEM) in use, so an unchanged one is not swapped.
    serving: Option<String>,
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn step_message(step: Step) -> &'static str {
    match step {
        Step::Create => "created a CA and a serving certificate",
        Step::RenewServing => "renewed the serving certificate",
        Step::AnnounceCa => "CA rotation: a new CA joins the caBundle",
        Step::PromoteCa => "CA rotation: the new CA signs the serving certificate",
        Step::RetirePrevious => "CA rotation: the previous CA leaves the caBundle",
    }
}

impl Controller {
    /// A controller for `settings`, calling the API server through `client`.
    pub fn new(settings: Settings, client: kube::Client, metrics: Arc<Metrics>) -> Self {
        let objects = Objects::new(
            client,
            &settings.namespace,
            &settings.secret,
            &settings.configuration,
        );
        Controller {
            settings,
            objects,
            metrics,
            resolver: None,
            serving: None,
        }
    }

    /// Passes until there is a certificate to serve; `None` if `shutdown`
    /// came first.
    pub async fn acquire(&mut self, shutdown: &CancellationToken) -> Option<Arc<CertResolver>> {
        let mut backoff = self.backoff();
        loop {
            if let Err(error) = self.bounded_cycle().await {
                self.failed(&error);
            }
            if let Some(resolver) = &self.resolver {
                return Some(Arc::clone(resolver));
            }
            tokio::select! {
                () = tokio::time::sleep(backoff.next()) => {}
                () = shutdown.cancelled() => return None,
            }
        }
    }

    /// Keeps the certificates current until `shutdown`.
    pub async fn run(mut self, shutdown: CancellationToken) {
        let mut backoff = self.backoff();
        let mut wait = Duration::ZERO;
        loop {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = shutdown.cancelled() => return,
            }
            wait = match self.bounded_cycle().await {
                Ok(next) => {
                    backoff.reset();
                    next
                }
                Err(error) => {
                    self.failed(&error);
                    backoff.next()
                }
            };
        }
    }

    /// One pass, given at most 30 s (and no more than a third of the
    /// serving lifetime): an API server that accepts and never answers
    /// must not hold renewals up.
    async fn bounded_cycle(&mut self) -> Result<Duration, CycleError> {
        let limit = (self.settings.lifetimes.serving() / 3)
            .clamp(Duration::from_secs(1), Duration::from_secs(30));
        tokio::time::timeout(limit, self.cycle())
            .await
            .unwrap_or(Err(CycleError::TimedOut(limit)))
    }

    fn backoff(&self) -> Backoff {
        // Retry well within the serving certificate's remaining life.
        let cap = (self.settings.lifetimes.serving() / 10).clamp(Duration::from_secs(1), RESYNC);
        Backoff::new(Duration::from_millis(500), cap)
    }

    fn failed(&self, error: &CycleError) {
        self.metrics.self_signed_failure();
        tracing::warn!(%error, "self-signed certificates: a pass failed; retrying with backoff");
    }

    /// One pass; returns when the next one is due.
    async fn cycle(&mut self) -> Result<Duration, CycleError> {
        for _ in 0..MAX_CONFLICTS {
            let read = self.objects.read_secret().await?;
            let (current, view) = self.usable(&read);
            // A configuration that cannot be patched does not stop renewals
            // (it is counted, and tried again next pass); it only holds back
            // a new CA.
            let published = match &current {
                Some(m) => {
                    let outcome = self.publish(m).await;
                    if outcome.is_err() {
                        self.metrics.self_signed_failure();
                    }
                    outcome.is_ok()
                }
                None => false,
            };
            let now = unix_now();
            // What the Secret holds is served while it is valid, even if the
            // step below cannot be written (a replica without `update`
            // still serves what another wrote).
            if let (Some(m), Some(v)) = (&current, &view)
                && !v.serving.expired(now)
            {
                self.serve(m)?;
            }
            let Some(step) = plan(view.as_ref(), now, published) else {
                return Ok(view.map_or(RESYNC, |v| next_check(&v, now, RESYNC)));
            };
            let hosts = &self.settings.hosts;
            let lifetimes = self.settings.lifetimes;
            let next = match (&current, step) {
                (Some(m), step) if step != Step::Create => m.apply(step, hosts, lifetimes, now)?,
                _ => Material::create(hosts, lifetimes, now)?,
            };
            match self.objects.write_secret(&read, &next).await {
                Ok(_) => {}
                Err(ApiError::Conflict(what)) => {
                    tracing::info!(secret = %what, "another replica wrote the Secret first; using what it wrote");
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
            let written = next.view(hosts)?;
            tracing::info!(
                secret = %self.settings.secret_name(),
                serving_not_after = written.serving.not_after,
                ca_not_after = written.ca.not_after,
                "{}",
                step_message(step)
            );
            let published = self.publish(&next).await;
            self.serve(&next)?;
            published?;
            return Ok(next_check(&written, now, RESYNC));
        }
        Err(CycleError::Contended)
    }

    /// The Secret's material and its view, when it is usable; a broken
    /// Secret is reported (and then replaced by the plan's `Create`).
    fn usable(&self, read: &StoredSecret) -> (Option<Material>, Option<View>) {
        let checked = read.material.clone().and_then(|m| {
            m.map(|m| m.view(&self.settings.hosts).map(|v| (m, v)))
                .transpose()
        });
        match checked {
            Ok(Some((m, v))) => (Some(m), Some(v)),
            Ok(None) => (None, None),
            Err(error) => {
                tracing::warn!(
                    secret = %self.settings.secret_name(),
                    %error,
                    "the Secret's certificates cannot be used; replacing them"
                );
                (None, None)
            }
        }
    }

    /// Puts the material's bundle into the configuration; a patch that lost
    /// to another replica's is tried again on a fresh read.
    async fn publish(&self, material: &Material) -> Result<(), ApiError> {
        let mut outcome = self.objects.publish(&material.bundle()).await;
        for _ in 1..MAX_CONFLICTS {
            if !matches!(outcome, Err(ApiError::Conflict(_))) {
                break;
            }
            outcome = self.objects.publish(&material.bundle()).await;
        }
        match outcome {
            Ok(Publication::Unchanged) => Ok(()),
            Ok(Publication::Patched(webhooks)) => {
                let cas = material.bundle().matches("BEGIN CERTIFICATE").count();
                tracing::info!(
                    configuration = %self.settings.configuration,
                    webhooks,
                    cas,
                    "patched the caBundle"
                );
                Ok(())
            }
            Err(error) => {
                tracing::warn!(%error, "cannot publish the caBundle; retrying");
                Err(error)
            }
        }
    }

    /// New handshakes get the material's serving certificate.
    fn serve(&mut self, material: &Material) -> Result<(), MaterialError> {
        if self.serving.as_ref() == Some(&material.serving.cert) {
            return Ok(());
        }
        let loaded = parse(
            Path::new("tls.crt"),
            material.serving.cert.as_bytes(),
            Path::new("tls.key"),
            material.serving.key.as_bytes(),
        )
        .map_err(|e| MaterialError::Key {
            key: "tls.key",
            reason: e.to_string(),
        })?;
        match &self.resolver {
            Some(resolver) => resolver.swap(Arc::clone(&loaded.key)),
            None => self.resolver = Some(Arc::new(CertResolver::new(Arc::clone(&loaded.key)))),
        }
        self.serving = Some(material.serving.cert.clone());
        self.metrics.certificate_in_use(loaded.not_after);
        self.metrics.certificate_reload("applied");
        tracing::info!(
            serial = %loaded.serial,
            not_after = loaded.not_after,
            "serving certificate in use"
        );
        Ok(())
    }
}

/// Waits between failed passes: doubling from `first` up to `cap`.
#[derive(Debug)]
struct Backoff {
    first: Duration,
    cap: Duration,
    next: Duration,
}

impl Backoff {
    fn new(first: Duration, cap: Duration) -> Self {
        let first = first.min(cap);
        Backoff {
            first,
            cap,
            next: first,
        }
    }

    fn next(&mut self) -> Duration {
        let wait = self.next;
        self.next = self.next.saturating_mul(2).min(self.cap);
        wait
    }

    fn reset(&mut self) {
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(500), Duration::from_secs(3));
        let waits: Vec<u64> = (0..5).map(|_| b.next().as_millis() as u64).collect();
        assert_eq!(waits, [500, 1000, 2000, 3000, 3000]);
        b.reset();
        assert_eq!(b.next(), Duration::from_millis(500));
        let mut tiny = Backoff::new(Duration::from_secs(2), Duration::from_secs(1));
        assert_eq!(tiny.next(), Duration::from_secs(1));
    }
}
