//! What the gate reads of a proxy's status.

use sluice_admin_api::{Analysis, ClusterAnalysis, ConfigVersion, FailedVersion, Finding, Verdict};

use super::*;

fn cv(name: &str) -> ConfigVersion {
    sluice_volume::config_version(name.as_bytes())
}

/// A proxy that returned from `new` to `old` after a finding.
fn returned() -> ConfigStatus {
    let finding = Finding {
        cluster: "orders".to_owned(),
        step: "brokers".to_owned(),
        before: "node 0 at p:19093 worked".to_owned(),
        after: "node 0 at p:19193: connection refused".to_owned(),
    };
    let mut s = ConfigStatus::running(cv("old"), sluice_volume::effective_version(&cv("old"), []));
    s.analysis = Some(Analysis {
        version: cv("new").into(),
        previous: cv("old"),
        verdict: Verdict::Regressed,
        started_at: "2026-01-01T00:00:00.000Z".to_owned(),
        window_ms: 30_000,
        clusters: vec![ClusterAnalysis {
            cluster: "orders".to_owned(),
            verdict: Verdict::Regressed,
            front_door_before: None,
            front_door_after: None,
            findings: vec![finding.clone()],
            notes: Vec::new(),
        }],
        reverted: true,
    });
    s.last_failed_version = Some(FailedVersion {
        version: cv("new").into(),
        stage: FailureStage::ClientCheck,
        reason: finding.to_string(),
        timestamp: "2026-01-01T00:00:31.000Z".to_owned(),
    });
    s
}

#[test]
fn a_client_check_failure_names_the_cluster_the_step_before_and_after() {
    let status = gate_status(&returned());
    let (version, cause) = status.failed.expect("failed");
    assert_eq!(version, cv("new"));
    assert_eq!(
        cause,
        "client-side check failed: virtual cluster orders: brokers: before: node 0 at p:19093 \
         worked; after: node 0 at p:19193: connection refused (the proxy returned to the version \
         before by itself)"
    );
    let analysis = status.analysis.expect("analysis");
    assert_eq!(analysis.verdict, Verdict::Regressed);
    assert_eq!(analysis.findings.len(), 1);
}

#[test]
fn other_failures_keep_their_stage() {
    let mut s = returned();
    s.analysis = None;
    if let Some(f) = s.last_failed_version.as_mut() {
        f.stage = FailureStage::UpstreamCheck;
        f.reason = "kafka-0:9093: connection refused".to_owned();
    }
    let (_, cause) = gate_status(&s).failed.expect("failed");
    assert_eq!(
        cause,
        "upstream check failed: kafka-0:9093: connection refused"
    );
}
