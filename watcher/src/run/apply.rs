//! Applying one content: skip it when the proxy runs it, else validate,
//! then reload, with retries; the rollout gate's effective version held to.

use std::time::Duration;

use tokio::sync::watch;

use crate::client::{Answer, CallError, ProxyClient};
use crate::metrics::Metrics;
use crate::referenced::Referenced;
use crate::retry::Retry;
use crate::volume::Content;

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

/// What the watcher knows of the effective versions (configuration and
/// referenced files, as read here) when it applies a content.
#[derive(Debug, Clone, Copy, Default)]
pub struct Effective<'a> {
    /// The one last brought in sync with the proxy.
    pub in_sync: Option<&'a str>,
    /// The one the rollout gate opened for, when the rollout is of
    /// referenced files under the configuration in force.
    pub gated: Option<&'a str>,
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
) -> (Outcome, Option<String>) {
    let Effective { in_sync, gated } = effective;
    let Some(bytes) = content.bytes.as_deref() else {
        return (Outcome::Failed("the file cannot be read".into()), None);
    };
    let mut retry = Retry::new(deadline);
    loop {
        // Newer content may cut the checks short, but never a reload once
        // sent: the proxy would apply it anyway, and the next content's
        // If-Match must see its result.
        let checks = async {
            let status = client.status().await?;
            let current = status.current_config_version;
            if current.as_str() == content.digest {
                referenced.set(status.files);
                let seen = referenced.effective(content);
                if status.effective_version.as_str() == seen || in_sync == Some(seen.as_str()) {
                    return Ok(Err((Outcome::Unchanged, Some(seen))));
                }
                if gated.is_some_and(|g| g != seen) {
                    return Ok(Err((Outcome::Regate, None)));
                }
            }
            let (answer, files, proxy_read) = client.validate(bytes).await?;
            referenced.set(files);
            let validated = referenced.effective(content);
            if let Answer::Invalid(errors) = answer {
                return Ok(Err((Outcome::Rejected(errors), Some(validated))));
            }
            // A rollout of files: the reload applies them only as the proxy
            // validated them (a change since answers 412: back to the gate).
            let files_only = current.as_str() == content.digest && gated.is_some();
            let if_effective = files_only.then_some(proxy_read);
            Ok::<_, CallError>(Ok((current, validated, if_effective)))
        };
        let checked = tokio::select! {
            r = checks => r,
            _ = newer.changed() => return (Outcome::Superseded, None),
        };
        let reason = match checked {
            Ok(Err(done)) => return done,
            Ok(Ok((current, validated, if_effective))) => match client
                .reload(bytes, Some(current.as_str()), if_effective.as_deref())
                .await
            {
                Ok(answer) => {
                    return (reloaded(content, answer), Some(validated));
                }
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

/// What a reload's answer means for `content`; logs what the operator
/// must know of an applied one.
fn reloaded(content: &Content, answer: Answer) -> Outcome {
    match answer {
        Answer::Accepted {
            restart_required,
            clusters_failed,
        } => {
            if !clusters_failed.is_empty() {
                tracing::warn!(
                    version = %content.digest,
                    clusters_failed = %clusters_failed.join("; "),
                    "applied; some virtual clusters could not start (each reload retries them)"
                );
            }
            if !restart_required.is_empty() {
                tracing::warn!(
                    version = %content.digest,
                    restart_required = %restart_required.join("; "),
                    "applied; part of it takes effect only when the proxy restarts"
                );
            }
            Outcome::Applied
        }
        Answer::Invalid(errors) => Outcome::Rejected(errors),
    }
}
