//! A pod that starts while its fleet holds a rollout halted never serves the
//! halted version its volume holds. Its proxy starts held (`run --hold`):
//! its data plane serves nothing until told which version to serve. The
//! watcher tells it, at start and whenever it finds its proxy held again (a
//! proxy restarted alone), from what its peers say:
//!
//! - a peer **vouches** for the version it runs when it is live, ready, not
//!   held, not stopping, no cluster of it failed since that version came
//!   into force, and its analysis of that version (if one is about it)
//!   passed or was off; and no live peer recorded that version as failed
//!   (the version a rollout halted on is vouched for by no one);
//! - a peer vouches for the version held → **release** it
//!   (`POST /admin/config/release`);
//! - else a peer vouches for another version → **from that peer**: its
//!   exact bytes (`GET /admin/config`, their SHA-256 checked against the
//!   version it runs), validated and reloaded on top of the version held;
//!   the reload releases the proxy. The volume's version then goes through
//!   the rollout gate like any new version: a halted one is never applied;
//! - no peer vouches for anything (every pod restarted at once, or a first
//!   start) → **release alone**, with the volume's version, and say so. A
//!   watcher without peers has no one to ask: it releases its proxy alone.
//!
//! [`decide`] is pure; [`settle`] observes, decides and acts.

use std::time::Duration;

use sluice_admin_api::{ConfigStatus, ConfigVersion, Verdict};

use super::peers;
use super::rollout::FleetSettings;
use crate::client::{Answer, CallError, ProxyClient};
use crate::events::{Kind, PodEvents};
use crate::tls::ProxyTls;

/// One peer that answered: its admin API's URL and its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// Where its admin API is.
    pub url: String,
    /// What it said.
    pub status: ConfigStatus,
}

/// What a proxy started held does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// A healthy peer vouches for the version held: serve it.
    Release {
        /// The first peer (by instance name) that vouches for it.
        by: String,
    },
    /// No healthy peer vouches for the version held; this one vouches for
    /// `version` (the version most peers vouch for): serve that, read from
    /// it.
    FromPeer {
        /// The peer's instance name.
        instance: String,
        /// Its admin API.
        url: String,
        /// The version it runs and vouches for.
        version: ConfigVersion,
    },
    /// No healthy peer vouches for any version: serve the version held.
    ReleaseAlone,
}

/// The version `status`'s proxy vouches for, if it vouches for one (see the
/// module documentation; the fleet's own veto, a version any live peer
/// failed, is [`decide`]'s).
pub fn vouched(status: &ConfigStatus) -> Option<&ConfigVersion> {
    let version = &status.current_config_version;
    let judged_well = match &status.analysis {
        Some(a) if a.version == *version || a.version == status.effective_version => {
            matches!(a.verdict, Verdict::Passed | Verdict::Off)
        }
        // No analysis, or one of another version (a reverted one).
        _ => true,
    };
    let healthy = status.ready && !status.held && !status.stopping;
    let failed_since = status
        .clusters_failed
        .iter()
        .any(|c| c.since_current_version);
    (healthy && judged_well && !failed_since).then_some(version)
}

/// What the proxy of instance `me`, holding `held`, does, given the peers
/// that answered (this pod's own entry, if listed, is left out).
pub fn decide(me: &str, held: &ConfigVersion, peers: &[Answered]) -> Start {
    let halted = |v: &ConfigVersion| {
        peers.iter().any(|p| {
            p.status
                .last_failed_version
                .as_ref()
                .is_some_and(|f| f.version == *v)
        })
    };
    let mut vouchers: Vec<(&str, &str, &ConfigVersion)> = peers
        .iter()
        .filter(|p| !p.status.instance.is_empty() && p.status.instance != me)
        .filter_map(|p| {
            let v = vouched(&p.status)?;
            Some((p.status.instance.as_str(), p.url.as_str(), v))
        })
        .filter(|(_, _, v)| !halted(v))
        .collect();
    // One voice per instance (a pod may be listed under two URLs).
    vouchers.sort();
    vouchers.dedup_by(|a, b| a.0 == b.0);
    if let Some((by, _, _)) = vouchers.iter().find(|(_, _, v)| *v == held) {
        return Start::Release {
            by: (*by).to_owned(),
        };
    }
    let votes = |v: &ConfigVersion| vouchers.iter().filter(|(_, _, w)| *w == v).count();
    // The version most peers vouch for; among equals, the first instance's.
    let mut best: Option<(usize, &(&str, &str, &ConfigVersion))> = None;
    for voucher in &vouchers {
        let n = votes(voucher.2);
        if best.is_none_or(|(m, _)| n > m) {
            best = Some((n, voucher));
        }
    }
    match best {
        Some((_, (instance, url, version))) => Start::FromPeer {
            instance: (*instance).to_owned(),
            url: (*url).to_owned(),
            version: (*version).clone(),
        },
        None => Start::ReleaseAlone,
    }
}

/// What [`settle`] found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// The proxy is not held: nothing to do.
    NotHeld,
    /// Released with the version it held, which a peer vouches for.
    Released,
    /// Reloaded with this version, read from a peer.
    FromPeer(ConfigVersion),
    /// Released with the version it held, no peer vouching for any.
    Alone,
    /// This pod's proxy did not answer.
    Unreachable(String),
    /// The decision could not be carried out; the proxy stays held (the
    /// next check tries again, and its `--hold` timeout bounds the wait).
    Failed(String),
}

/// Reads this pod's proxy's status; when it is held, asks the peers (of
/// `fleet`, if any), [`decide`]s and acts, with a log line and an Event for
/// each outcome. The watcher calls it at its start, at the start of each
/// pass, and when [`until_held`] ends: a proxy that does not answer yet (its
/// container starting beside the watcher's) is settled at the next of
/// these. `volume` is the volume's version, for the log.
pub async fn settle(
    own: &ProxyClient,
    fleet: Option<&FleetSettings>,
    volume: Option<&ConfigVersion>,
    events: Option<&PodEvents>,
) -> Settled {
    let status = match own.status().await {
        Ok(s) if s.held => s,
        Ok(_) => return Settled::NotHeld,
        Err(e) => return Settled::Unreachable(e.to_string()),
    };
    let held = status.current_config_version;
    let volume = volume.unwrap_or(&held);
    let answered: Vec<Answered> = match fleet {
        Some(f) => peers::statuses(&f.source, &f.tls, f.call_timeout).await,
        None => Vec::new(),
    }
    .into_iter()
    .filter_map(|(url, status)| {
        Some(Answered {
            url,
            status: status?,
        })
    })
    .collect();
    let settled = match decide(&status.instance, &held, &answered) {
        Start::Release { by } => match own.release().await {
            Ok(_) => {
                tracing::info!(version = %held, peer = %by, "a healthy peer vouches for the version held: serving it");
                let message = format!("proxy configuration {held} released: {by} vouches for it");
                crate::events::record(events, Kind::Normal, "ConfigReleased", message);
                Settled::Released
            }
            Err(e) => Settled::Failed(format!("release: {e}")),
        },
        Start::FromPeer {
            instance,
            url,
            version,
        } => match from_peer(own, fleet.map(|f| &f.tls), &url, &version, &held).await {
            Ok(()) => {
                tracing::info!(%version, peer = %instance, volume = %volume, "started from the fleet's last good version; the volume's version waits for the gate");
                let message = format!(
                    "started from the fleet's last good version {version} (read from {instance}); the volume's version {volume} waits for the gate"
                );
                crate::events::record(events, Kind::Normal, "StartedFromFleet", message);
                Settled::FromPeer(version)
            }
            Err(e) => Settled::Failed(format!("{version} from {instance}: {e}")),
        },
        Start::ReleaseAlone => match own.release().await {
            Ok(_) => {
                tracing::warn!(version = %held, peers = answered.len(), "no healthy peer vouches for a version: serving the volume's version");
                let message = format!(
                    "no healthy peer vouches for a version: serving the volume's version {held}"
                );
                crate::events::record(events, Kind::Warning, "StartedAlone", message);
                Settled::Alone
            }
            Err(e) => Settled::Failed(format!("release: {e}")),
        },
    };
    if let Settled::Failed(reason) = &settled {
        tracing::warn!(version = %held, %reason, "this pod's proxy stays held: the next check tries again");
    }
    settled
}

/// Reads `version`'s bytes from the peer at `url` (checked), has this
/// pod's proxy validate them, and reloads them on top of `held`.
async fn from_peer(
    own: &ProxyClient,
    tls: Option<&ProxyTls>,
    url: &str,
    version: &ConfigVersion,
    held: &ConfigVersion,
) -> Result<(), CallError> {
    let peer = ProxyClient::with_tls(url, None, tls.unwrap_or(&ProxyTls::default()))
        .map_err(|e| CallError::Fatal(format!("a client for {url}: {e}")))?;
    // The client's own timeouts bound the call.
    let (bytes, read) = peer.config().await?;
    if read != *version {
        return Err(CallError::Retry(format!(
            "{url} runs {read} now, not {version}"
        )));
    }
    match own.validate(&bytes).await?.0 {
        Answer::Accepted { .. } => {}
        Answer::Invalid(errors) => {
            return Err(CallError::Fatal(format!(
                "invalid here: {}",
                errors.join("; ")
            )));
        }
    }
    match own.reload(&bytes, Some(held), None).await? {
        Answer::Accepted { .. } => Ok(()),
        Answer::Invalid(errors) => Err(CallError::Fatal(format!(
            "rejected here: {}",
            errors.join("; ")
        ))),
    }
}

/// Ends once this pod's proxy reports itself held (asked every `every`):
/// its proxy restarted while the watcher waited at the gate.
pub async fn until_held(own: &ProxyClient, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        if own.status().await.is_ok_and(|s| s.held) {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
