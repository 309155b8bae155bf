//! Applying one content, past its turn: observe (its proxy's status, the
//! files as read here), decide ([`crate::decide`]: unchanged, back to the
//! gate, or validate; then reload or rejected), act, with retries.

use std::time::Duration;

use sluice_admin_api::{ConfigVersion, EffectiveVersion};
use tokio::sync::watch;

use crate::client::{Answer, CallError, ProxyClient};
pub use crate::decide::Outcome;
use crate::decide::{Memory, Observed, Proxy, Seen, Stage, Step, Validated, decide};
use crate::metrics::Metrics;
use crate::referenced::Referenced;
use crate::retry::Retry;
use crate::volume::Content;

/// Why content without bytes fails.
pub(crate) const UNREADABLE: &str = "the file cannot be read";

/// What the watcher knows of the effective versions (configuration and
/// referenced files, as read here) when it applies a content.
#[derive(Debug, Clone, Copy, Default)]
pub struct Effective<'a> {
    /// The one last brought in sync with the proxy.
    pub in_sync: Option<&'a EffectiveVersion>,
    /// The one the rollout gate opened for, when the rollout is of
    /// referenced files under the configuration in force.
    pub gated: Option<&'a EffectiveVersion>,
}

/// Applies one content: skip it if the proxy runs it (its referenced files
/// included: the proxy's effective version is the one seen here, or the one
/// last brought in sync), else validate, then reload on top of the version
/// seen. Learns the referenced files from the proxy's answers. Gives up
/// when `newer` changes.
///
/// `gated` is the effective version the rollout gate opened for, when the
/// rollout is of referenced files under the configuration in force: when
/// the files read here are no longer those, nothing is sent
/// ([`Outcome::Regate`]): no other pod ran them yet.
///
/// Also returns, for an outcome the proxy gave (applied, unchanged,
/// rejected), the effective version (as seen here) it is about: the files
/// as read when the proxy ran or validated them, never read again
/// afterwards, when they may have changed once more.
pub async fn apply(
    client: &ProxyClient,
    metrics: &Metrics,
    content: &Content,
    deadline: Duration,
    newer: &mut watch::Receiver<Content>,
    referenced: &mut Referenced,
    effective: Effective<'_>,
) -> (Outcome, Option<EffectiveVersion>) {
    let (Some(bytes), Some(config)) = (content.bytes.as_deref(), content.digest.as_ref()) else {
        return (Outcome::Failed(UNREADABLE.into()), None);
    };
    let memory = Memory {
        in_sync: effective.in_sync.cloned(),
        ..Memory::default()
    };
    let stage = Stage::Past {
        gated: effective.gated.cloned(),
    };
    let attempt = Attempt {
        client,
        bytes,
        config,
        stage: &stage,
        memory: &memory,
    };
    let mut retry = Retry::new(deadline);
    loop {
        // Newer content may cut the checks short, but never a reload once
        // sent: the proxy would apply it anyway, and the next content's
        // If-Match must see its result.
        let checked = tokio::select! {
            r = attempt.check(referenced) => r,
            _ = newer.changed() => return (Outcome::Superseded, None),
        };
        let reason = match checked {
            Ok(Checked::Done(outcome, about)) => return (outcome, about),
            Ok(Checked::Reload {
                if_match,
                if_effective,
                validated,
            }) => match client
                .reload(bytes, Some(&if_match), if_effective.as_ref())
                .await
            {
                Ok(answer) => return (reloaded(content, answer), Some(validated)),
                Err(CallError::Fatal(reason)) => return (Outcome::Failed(reason), None),
                Err(CallError::Retry(reason)) => reason,
            },
            Err(CallError::Fatal(reason)) => return (Outcome::Failed(reason), None),
            Err(CallError::Retry(reason)) => reason,
        };
        let Some(wait) = retry.next_wait() else {
            let reason = format!("gave up after {deadline:?}: {reason}");
            return (Outcome::Failed(reason), None);
        };
        metrics.retry(&reason, wait);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = newer.changed() => return (Outcome::Superseded, None),
        }
    }
}

/// One attempt's fixed inputs.
struct Attempt<'a> {
    client: &'a ProxyClient,
    bytes: &'a [u8],
    config: &'a ConfigVersion,
    stage: &'a Stage,
    memory: &'a Memory,
}

/// What the checks of one attempt found.
enum Checked {
    /// Nothing (more) to send: the outcome, and what it is about.
    Done(Outcome, Option<EffectiveVersion>),
    /// Send the reload so.
    Reload {
        if_match: ConfigVersion,
        if_effective: Option<EffectiveVersion>,
        /// The effective version (as seen here) the proxy validated.
        validated: EffectiveVersion,
    },
}

impl Attempt<'_> {
    /// Observes (its proxy's status once, the files as read here), decides,
    /// validates when the decider says so, and decides again.
    async fn check(&self, referenced: &mut Referenced) -> Result<Checked, CallError> {
        let status = self.client.status().await?;
        let proxy = Proxy::of(&status);
        if proxy.config == *self.config {
            referenced.set(status.files);
        }
        let seen = Seen {
            config: self.config.clone(),
            effective: referenced.effective(self.config),
        };
        let observed = Observed {
            stage: self.stage,
            seen: Some(&seen),
            proxy: Some(&proxy),
            validated: None,
        };
        match decide(&observed, self.memory) {
            Step::Unchanged => return Ok(Checked::Done(Outcome::Unchanged, Some(seen.effective))),
            Step::Regate => return Ok(Checked::Done(Outcome::Regate, None)),
            Step::ReturnedFrom => {
                let why = status.last_failed_version.map(|f| f.reason);
                let error = format!(
                    "its proxy's client-side check failed this version and the proxy returned to the version before: {}",
                    why.unwrap_or_default()
                );
                let rejected = Outcome::Rejected(vec![error]);
                return Ok(Checked::Done(rejected, Some(seen.effective)));
            }
            // Validate (the only other step past the turn with a status).
            _ => {}
        }
        let (answer, files, read) = self.client.validate(self.bytes).await?;
        referenced.set(files);
        let validated = referenced.effective(self.config);
        let v = Validated {
            valid: matches!(answer, Answer::Accepted { .. }),
            read,
        };
        let step = decide(
            &Observed {
                validated: Some(&v),
                ..observed
            },
            self.memory,
        );
        match (step, answer) {
            (
                Step::Reload {
                    if_match,
                    if_effective,
                },
                _,
            ) => Ok(Checked::Reload {
                if_match,
                if_effective,
                validated,
            }),
            (_, Answer::Invalid(errors)) => {
                Ok(Checked::Done(Outcome::Rejected(errors), Some(validated)))
            }
            (step, Answer::Accepted { .. }) => Err(CallError::Fatal(format!(
                "valid, and yet no reload: {step:?}"
            ))),
        }
    }
}

/// What a reload's answer means for `content`; logs what the operator
/// must know of an applied one.
fn reloaded(content: &Content, answer: Answer) -> Outcome {
    let version = content.digest.as_ref().map(ConfigVersion::as_str);
    match answer {
        Answer::Accepted {
            restart_required,
            clusters_failed,
        } => {
            if !clusters_failed.is_empty() {
                tracing::warn!(
                    version,
                    clusters_failed = %clusters_failed.join("; "),
                    "applied; some virtual clusters could not start (each reload retries them)"
                );
            }
            if !restart_required.is_empty() {
                tracing::warn!(
                    version,
                    restart_required = %restart_required.join("; "),
                    "applied; part of it takes effect only when the proxy restarts"
                );
            }
            Outcome::Applied
        }
        Answer::Invalid(errors) => Outcome::Rejected(errors),
    }
}
