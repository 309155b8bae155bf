//! Knowing the peers: every pod's proxy admin API, from a fixed list of
//! URLs (`--peers`, bare metal and tests) or a headless Service's DNS name
//! (`--peers-dns NAME:PORT`, resolved again at every poll), each asked for
//! its status at every poll. A peer is known by its URL; the gate sees it by
//! the instance name its proxy reports. Peers are asked over the scheme and
//! with the CA of this pod's own admin API (`--proxy`, `--proxy-ca`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_admin_api::{Analysis, ConfigStatus, FailureStage};

use super::gate::{Peer, PeerAnalysis, PeerStatus};
use super::slots::{SlotError, rank};
use crate::client::ProxyClient;
use crate::tls::ProxyTls;
use crate::token::Token;

/// Where the peers are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerSource {
    /// Every pod's admin API, this one's included.
    Urls(Vec<String>),
    /// A name that resolves to every pod's address, and the admin port.
    Dns {
        /// The headless Service's name.
        name: String,
        /// The admin API's port.
        port: u16,
    },
}

impl std::str::FromStr for PeerSource {
    type Err = String;

    /// `NAME:PORT`, for `--peers-dns`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, port) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("{s:?}: expected NAME:PORT"))?;
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("{s:?}: {port:?} is not a port"))?;
        if name.is_empty() {
            return Err(format!("{s:?}: the name is empty"));
        }
        Ok(PeerSource::Dns {
            name: name.to_owned(),
            port,
        })
    }
}

/// Every peer's status once, by URL (`None`: it did not answer within
/// `timeout`), for `sluice-watcher fleet`. No token: status is a read.
pub async fn statuses(
    source: &PeerSource,
    tls: &ProxyTls,
    timeout: Duration,
) -> Vec<(String, Option<ConfigStatus>)> {
    let peers = Peers::new(source.clone(), None, tls.clone(), timeout);
    let asks = peers.urls().await.into_iter().map(|url| {
        let client = ProxyClient::with_tls(&url, None, tls);
        async move {
            let status = match client {
                Ok(c) => tokio::time::timeout(timeout, c.status())
                    .await
                    .ok()
                    .and_then(Result::ok),
                Err(_) => None,
            };
            (url, status)
        }
    });
    futures_util::future::join_all(asks).await
}

/// What is known of one peer URL.
#[derive(Debug)]
struct Known {
    client: ProxyClient,
    /// When its last answer came.
    last_answer: Option<Instant>,
    /// Since when it has not answered (see `gate::Peer::silent_since`).
    silent_since: Option<Instant>,
    status: Option<ConfigStatus>,
    /// Whether its silence was already reported (once per silence).
    reported_silent: bool,
}

/// The peers and what they last said.
#[derive(Debug)]
pub struct Peers {
    source: PeerSource,
    token: Option<String>,
    tls: ProxyTls,
    timeout: Duration,
    known: BTreeMap<String, Known>,
}

/// One poll's view: every peer for the gate, and this pod's slot.
#[derive(Debug, Clone)]
pub struct View {
    /// Every known peer, this pod included.
    pub peers: Vec<Peer>,
    /// This pod's slot.
    pub slot: u64,
    /// Peers newly silent past the peer timeout since the last poll (URL).
    pub newly_silent: Vec<String>,
}

impl Peers {
    /// Peers from `source`, reached with `tls`; each call waits at most
    /// `timeout`.
    pub fn new(
        source: PeerSource,
        token: Option<String>,
        tls: ProxyTls,
        timeout: Duration,
    ) -> Peers {
        Peers {
            source,
            token,
            tls,
            timeout,
            known: BTreeMap::new(),
        }
    }

    async fn urls(&self) -> Vec<String> {
        match &self.source {
            PeerSource::Urls(urls) => urls.clone(),
            PeerSource::Dns { name, port } => {
                match tokio::net::lookup_host((name.as_str(), *port)).await {
                    Ok(addrs) => {
                        let scheme = self.tls.scheme();
                        addrs.map(|a| format!("{scheme}://{a}")).collect()
                    }
                    Err(e) => {
                        tracing::warn!(peers = %name, error = %e, "cannot resolve the peers' name");
                        Vec::new()
                    }
                }
            }
        }
    }

    /// Asks every peer for its status (at once), and derives this pod's slot
    /// from `me`, its own proxy's instance name. `own` (this pod's proxy URL)
    /// is always a peer, whether the list names it or not.
    pub async fn poll(
        &mut self,
        me: &str,
        own: &str,
        peer_timeout: Duration,
    ) -> Result<View, SlotError> {
        let now = Instant::now();
        let mut urls = self.urls().await;
        urls.push(own.trim_end_matches('/').to_owned());
        for url in urls {
            if !self.known.contains_key(&url) {
                let token = self.token.clone().map(|t| Arc::new(Token::fixed(t)));
                match ProxyClient::with_tls(&url, token, &self.tls) {
                    Ok(client) => {
                        self.known.insert(
                            url,
                            Known {
                                client,
                                last_answer: None,
                                silent_since: Some(now),
                                status: None,
                                reported_silent: false,
                            },
                        );
                    }
                    Err(e) => {
                        tracing::warn!(peer = %url, error = %e, "cannot make a client for a peer")
                    }
                }
            }
        }
        let timeout = self.timeout;
        let asks = self.known.values().map(|k| {
            let client = k.client.clone();
            async move { tokio::time::timeout(timeout, client.status()).await }
        });
        let answers = futures_util::future::join_all(asks).await;
        let answered_at = Instant::now();
        let mut newly_silent = Vec::new();
        for ((url, known), answer) in self.known.iter_mut().zip(answers) {
            match answer {
                Ok(Ok(status)) => {
                    if known.reported_silent {
                        tracing::info!(peer = %url, instance = %status.instance, "peer answers again");
                    }
                    known.last_answer = Some(answered_at);
                    known.silent_since = None;
                    known.status = Some(status);
                    known.reported_silent = false;
                }
                _ => {
                    // Silent from the first call it did not answer.
                    let since = *known.silent_since.get_or_insert(now);
                    if !known.reported_silent && answered_at.duration_since(since) >= peer_timeout {
                        known.reported_silent = true;
                        newly_silent.push(url.clone());
                    }
                }
            }
        }
        self.view(me, newly_silent)
    }

    fn view(&self, me: &str, newly_silent: Vec<String>) -> Result<View, SlotError> {
        // A peer is its instance; this pod may be listed under more than one
        // URL (its pod address and 127.0.0.1), which is not a duplicate.
        let mut by_instance: BTreeMap<&str, Vec<&Known>> = BTreeMap::new();
        let mut unnamed = Vec::new();
        for known in self.known.values() {
            match known.status.as_ref().map(|s| s.instance.as_str()) {
                Some(name) if !name.is_empty() => by_instance.entry(name).or_default().push(known),
                _ => unnamed.push(known),
            }
        }
        if let Some((name, _)) = by_instance.iter().find(|(n, k)| **n != me && k.len() > 1) {
            return Err(SlotError::Duplicate((*name).to_owned()));
        }
        let instances: Vec<&str> = by_instance.keys().copied().collect();
        let ranked = |name: &str| rank(name, &instances);
        let slot = ranked(me)?;
        let mut peers = Vec::new();
        for (name, entries) in &by_instance {
            // The freshest answer stands for the instance.
            let Some(k) = entries.iter().max_by_key(|k| k.last_answer) else {
                continue;
            };
            peers.push(Peer {
                instance: (*name).to_owned(),
                slot: ranked(name)?,
                read_at: k.last_answer,
                silent_since: k.silent_since,
                status: k.status.as_ref().map(gate_status),
            });
        }
        // A peer that never answered has no name yet: it holds the gate
        // (as the slot after everyone) until it answers or times out.
        let next = u64::try_from(instances.len()).unwrap_or(u64::MAX);
        for (i, k) in unnamed.into_iter().enumerate() {
            peers.push(Peer {
                instance: format!("{} (not answering)", k.client.base()),
                slot: next.saturating_add(u64::try_from(i).unwrap_or(0)),
                read_at: k.last_answer,
                silent_since: k.silent_since,
                status: None,
            });
        }
        Ok(View {
            peers,
            slot,
            newly_silent,
        })
    }
}

/// What the gate reads of a proxy's status.
pub(crate) fn gate_status(s: &ConfigStatus) -> PeerStatus {
    let analysis = s.analysis.as_ref().map(peer_analysis);
    PeerStatus {
        version: s.current_config_version.clone(),
        effective: Some(s.effective_version.clone()),
        running_for: Duration::from_millis(s.running_for_ms),
        ready: s.ready,
        held: s.held,
        newly_failed: s
            .clusters_failed
            .iter()
            .filter(|c| c.since_current_version)
            .map(|c| c.name.clone())
            .collect(),
        failed: s.last_failed_version.as_ref().map(|f| {
            let cause = match analysis.as_ref() {
                // Which cluster, which step or signal, before and after.
                Some(a) if f.stage == FailureStage::ClientCheck && a.version == f.version => {
                    a.cause(&f.reason)
                }
                _ => format!("{} failed: {}", stage(f.stage), f.reason),
            };
            (f.version.clone(), cause)
        }),
        analysis,
    }
}

/// What the gate reads of a proxy's client-side analysis.
pub(crate) fn peer_analysis(a: &Analysis) -> PeerAnalysis {
    PeerAnalysis {
        version: a.version.clone(),
        verdict: a.verdict,
        findings: a
            .clusters
            .iter()
            .flat_map(|c| &c.findings)
            .map(ToString::to_string)
            .collect(),
        reverted: a.reverted,
    }
}

fn stage(s: FailureStage) -> &'static str {
    match s {
        FailureStage::Validate => "validation",
        FailureStage::UpstreamCheck => "upstream check",
        FailureStage::Reload => "reload",
        FailureStage::ClientCheck => "client-side check",
    }
}

#[cfg(test)]
mod tests;
