//! `sluice-watcher fleet`: one line per pod (instance, slot, version in
//! force and effective version, last attempt and its result, ready, the
//! client-side analysis' verdict, what failed), read from every peer's
//! status, with the first finding of a regression under it, and whether a
//! rollout is halted; or the same as JSON.

use std::time::Duration;

use serde::Serialize;
use sluice_admin_api::{ConfigStatus, Verdict};
use sluice_process::exit::{Exit, ExitStatus};

use super::follow::first_finding;
use super::peers::{PeerSource, peer_analysis, statuses};
use super::slots::rank;
use crate::tls::{ProxyCaError, ProxyTls};

/// Why `fleet` did not print a fleet with no halt.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// No peers were given.
    #[error("fleet needs --peers or --peers-dns")]
    NoPeers,
    /// `--proxy-ca` cannot be used.
    #[error(transparent)]
    ProxyCa(#[from] ProxyCaError),
    /// A rollout is halted (the view was printed).
    #[error("a rollout is halted")]
    Halted,
}

impl ExitStatus for FleetError {
    /// 1 when a rollout is halted; 2 for a usage or I/O problem.
    fn exit(&self) -> Exit {
        match self {
            FleetError::Halted => Exit::Invalid,
            _ => Exit::Usage,
        }
    }
}

/// `sluice-watcher fleet`: asks every peer once and prints one line per pod
/// (or JSON, with `json`); a halted rollout is an error (exit status 1).
pub async fn run(
    source: Option<PeerSource>,
    proxy_ca: Option<&std::path::Path>,
    timeout: Duration,
    json: bool,
) -> Result<(), FleetError> {
    use std::io::Write as _;
    let source = source.ok_or(FleetError::NoPeers)?;
    // Without a CA, HTTPS only for peers given as `https://` URLs.
    let tls = ProxyTls::new("", proxy_ca)?;
    // Status is a read: the token is never sent to a peer.
    let view = view(statuses(&source, &tls, timeout).await);
    let text = if json {
        serde_json::to_string_pretty(&view).unwrap_or_default() + "\n"
    } else {
        view.to_string()
    };
    // The command's result is its output.
    let _ = std::io::stdout().write_all(text.as_bytes());
    if view.halted {
        return Err(FleetError::Halted);
    }
    Ok(())
}

/// One pod as the fleet view shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodLine {
    /// The peer URL asked.
    pub url: String,
    /// Whether it answered.
    pub answered: bool,
    /// Its instance name.
    pub instance: Option<String>,
    /// Its slot (rank of its instance).
    pub slot: Option<u64>,
    /// The version its proxy runs.
    pub version: Option<String>,
    /// Its effective version (the configuration and the referenced files'
    /// contents as loaded): what differs between pods mid-renewal.
    pub effective_version: Option<String>,
    /// The last reload attempt: result and version.
    pub last_attempt: Option<String>,
    /// Whether its proxy is ready.
    pub ready: Option<bool>,
    /// Its proxy's client-side analysis of the last version it applied.
    pub analysis: Option<PodAnalysis>,
    /// A version that failed on it after its current one came into force,
    /// and why: what halts a rollout.
    pub failed: Option<String>,
}

/// A pod's client-side analysis, as the fleet view shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAnalysis {
    /// The version judged.
    pub version: String,
    /// Where it stands.
    pub verdict: Verdict,
    /// Whether the proxy returned to the version before by itself.
    pub reverted: bool,
    /// The first thing that got worse (and how many more), if any.
    pub finding: Option<String>,
}

/// What `s` says of its analysis.
fn pod_analysis(s: &ConfigStatus) -> Option<PodAnalysis> {
    let a = s.analysis.as_ref()?;
    Some(PodAnalysis {
        version: a.version.to_string(),
        verdict: a.verdict,
        reverted: a.reverted,
        finding: first_finding(&peer_analysis(a)),
    })
}

/// What failed on it after its current version came into force: its
/// `lastFailedVersion`, else a regression its analysis found in a version
/// it returned from.
fn failed(s: &ConfigStatus) -> Option<String> {
    // RFC 3339 in UTC with milliseconds: compared as text.
    let recorded = s
        .last_failed_version
        .as_ref()
        .filter(|f| f.version != s.current_config_version && f.timestamp >= s.applied_at)
        .map(|f| format!("{}: {}", short(f.version.as_str()), f.reason));
    recorded.or_else(|| {
        let a = s.analysis.as_ref()?;
        let returned = a.verdict == Verdict::Regressed && a.version != s.current_config_version;
        returned.then(|| {
            let what = first_finding(&peer_analysis(a)).unwrap_or_default();
            format!("{}: client-side check: {what}", short(a.version.as_str()))
        })
    })
}

/// The whole fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetView {
    /// Every pod, by slot (silent ones last).
    pub pods: Vec<PodLine>,
    /// Whether a rollout is halted (some pod failed a version after its
    /// current one came into force).
    pub halted: bool,
}

/// The view of these answers (`None`: the peer did not answer).
pub fn view(answers: Vec<(String, Option<ConfigStatus>)>) -> FleetView {
    let names: Vec<String> = answers
        .iter()
        .filter_map(|(_, s)| s.as_ref().map(|s| s.instance.clone()))
        .filter(|n| !n.is_empty())
        .collect();
    let mut pods: Vec<PodLine> = answers
        .into_iter()
        .map(|(url, status)| match status {
            None => PodLine {
                url,
                answered: false,
                instance: None,
                slot: None,
                version: None,
                effective_version: None,
                last_attempt: None,
                ready: None,
                analysis: None,
                failed: None,
            },
            Some(s) => PodLine {
                slot: rank(&s.instance, &names).ok(),
                instance: Some(s.instance.clone()),
                version: Some(s.current_config_version.to_string()),
                effective_version: Some(s.effective_version.to_string()),
                last_attempt: s.last_reload_attempt.as_ref().map(|a| {
                    let result = serde_json::to_value(a.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default();
                    let version = a.requested_version.as_ref().map_or("", |v| v.as_str());
                    format!("{result} {}", short(version))
                }),
                ready: Some(s.ready),
                analysis: pod_analysis(&s),
                failed: failed(&s),
                url,
                answered: true,
            },
        })
        .collect();
    pods.sort_by_key(|p| (p.slot.is_none(), p.slot));
    let halted = pods.iter().any(|p| p.failed.is_some());
    FleetView { pods, halted }
}

impl PodAnalysis {
    /// The verdict, the version when it is not the one in force (`current`),
    /// and whether the proxy returned from it.
    fn column(&self, current: Option<&str>) -> String {
        let mut text = self.verdict.as_str().to_owned();
        if current != Some(self.version.as_str()) {
            text = format!("{text} {}", short(&self.version));
        }
        if self.reverted {
            text.push_str(" (reverted)");
        }
        text
    }
}

/// `sha256:` and the first 12 hex digits.
fn short(version: &str) -> &str {
    version.get(..19).unwrap_or(version)
}

impl std::fmt::Display for FleetView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{:<4} {:<36} {:<20} {:<20} {:<30} {:<5} {:<40} FAILED",
            "SLOT", "INSTANCE", "VERSION", "EFFECTIVE", "LAST ATTEMPT", "READY", "ANALYSIS"
        )?;
        for p in &self.pods {
            let or = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
            writeln!(
                f,
                "{:<4} {:<36} {:<20} {:<20} {:<30} {:<5} {:<40} {}",
                p.slot.map_or_else(|| "-".to_owned(), |s| s.to_string()),
                p.instance
                    .clone()
                    .unwrap_or_else(|| format!("({} not answering)", p.url)),
                p.version.as_deref().map_or("-", short),
                p.effective_version.as_deref().map_or("-", short),
                or(&p.last_attempt),
                p.ready.map_or_else(|| "-".to_owned(), |r| r.to_string()),
                p.analysis
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), |a| a.column(p.version.as_deref())),
                or(&p.failed),
            )?;
            let finding = p
                .analysis
                .as_ref()
                .filter(|a| a.verdict == Verdict::Regressed);
            if let Some(finding) = finding.and_then(|a| a.finding.as_deref()) {
                writeln!(f, "     finding: {finding}")?;
            }
        }
        if self.halted {
            writeln!(f, "rollout halted: revert or fix the ConfigMap")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `name`'s version: a real digest, told apart by name.
    fn digest(name: &str) -> String {
        sluice_volume::sha256_hex(name.as_bytes())
    }

    fn status(instance: &str, version: &str, failed: Option<&str>) -> ConfigStatus {
        let version = digest(version);
        let mut s: ConfigStatus = serde_json::from_str(&format!(
            r#"{{"currentConfigVersion": "{version}", "effectiveVersion": "{version}", "appliedAt": "2026-01-01T00:00:00.000Z",
                "lastReloadAttempt": null, "lastValidationAttempt": null,
                "reloadInProgressSince": null, "instance": "{instance}", "ready": true}}"#
        ))
        .unwrap();
        s.last_failed_version = failed.map(|v| sluice_admin_api::FailedVersion {
            version: digest(v).parse().unwrap(),
            stage: sluice_admin_api::FailureStage::UpstreamCheck,
            reason: "connection refused".to_owned(),
            timestamp: "2026-01-01T00:01:00.000Z".to_owned(),
        });
        s
    }

    #[test]
    fn pods_are_listed_by_slot_and_a_failure_after_the_current_version_halts() {
        let v = view(vec![
            ("http://b".into(), Some(status("pod-b", "sha256:old", None))),
            ("http://c".into(), None),
            (
                "http://a".into(),
                Some(status("pod-a", "sha256:old", Some("sha256:new"))),
            ),
        ]);
        let order: Vec<_> = v.pods.iter().map(|p| p.url.as_str()).collect();
        assert_eq!(order, ["http://a", "http://b", "http://c"]);
        assert!(v.halted);
        let text = v.to_string();
        assert!(text.contains("rollout halted"), "{text}");
        assert!(text.contains("(http://c not answering)"), "{text}");
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["pods"][0]["slot"], 0);
        assert_eq!(json["halted"], true);
    }

    fn analysis(version: &str, verdict: Verdict, reverted: bool) -> sluice_admin_api::Analysis {
        let finding = |step: &str| sluice_admin_api::Finding {
            cluster: "orders".to_owned(),
            step: step.to_owned(),
            before: "p:9092 worked".to_owned(),
            after: "q:9092: connection refused".to_owned(),
        };
        sluice_admin_api::Analysis {
            version: digest(version).parse().unwrap(),
            previous: digest("sha256:old").parse().unwrap(),
            verdict,
            started_at: "2026-01-01T00:00:30.000Z".to_owned(),
            window_ms: 30_000,
            clusters: vec![sluice_admin_api::ClusterAnalysis {
                cluster: "orders".to_owned(),
                verdict,
                front_door_before: None,
                front_door_after: None,
                findings: match verdict {
                    Verdict::Regressed => vec![finding("bootstrap"), finding("brokers")],
                    _ => Vec::new(),
                },
                notes: Vec::new(),
            }],
            reverted,
        }
    }

    #[test]
    fn each_pod_shows_its_analysis_and_a_regression_its_first_finding_and_halts() {
        let mut canary = status("pod-a", "sha256:old", None);
        canary.analysis = Some(analysis("sha256:new", Verdict::Regressed, true));
        let mut other = status("pod-b", "sha256:old", None);
        other.analysis = Some(analysis("sha256:old", Verdict::Passed, false));
        let v = view(vec![
            ("http://a".into(), Some(canary)),
            ("http://b".into(), Some(other)),
        ]);
        // No lastFailedVersion: the regression it returned from halts.
        assert!(v.halted);
        let text = v.to_string();
        let new = short(&digest("sha256:new")).to_owned();
        assert!(
            text.contains(&format!("regressed {new} (reverted)")),
            "{text}"
        );
        assert!(
            text.contains(
                "finding: virtual cluster orders: bootstrap: before: p:9092 worked; \
                 after: q:9092: connection refused (and 1 more)"
            ),
            "{text}"
        );
        assert!(
            text.contains(&format!("{new}: client-side check: virtual cluster orders")),
            "{text}"
        );
        let b = text.lines().find(|l| l.contains("pod-b")).unwrap();
        assert!(b.contains(" passed "), "{b}");
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["pods"][0]["analysis"]["verdict"], "regressed");
        assert_eq!(json["pods"][0]["analysis"]["reverted"], true);
        assert_eq!(json["pods"][1]["analysis"]["verdict"], "passed");
        assert_eq!(json["pods"][1]["failed"], serde_json::Value::Null);
    }
}
