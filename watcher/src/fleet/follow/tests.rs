//! What one status read says of the analysis of the version applied.

use sluice_admin_api::{Analysis, ClusterAnalysis, EffectiveVersion, FailedVersion, Finding};

use super::*;

fn cv(name: &str) -> ConfigVersion {
    sluice_volume::config_version(name.as_bytes())
}

fn ev(name: &str) -> EffectiveVersion {
    sluice_volume::effective_version(&cv(name), [])
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A proxy running `current` whose last analysis is of `judged`.
fn status(current: &str, judged: Option<(&str, Verdict)>) -> ConfigStatus {
    let mut s = ConfigStatus::running(cv(current), ev(current));
    s.analysis = judged.map(|(version, verdict)| Analysis {
        version: cv(version).into(),
        previous: cv("old"),
        verdict,
        started_at: "2026-01-01T00:00:00.000Z".to_owned(),
        window_ms: 30_000,
        clusters: vec![ClusterAnalysis {
            cluster: "orders".to_owned(),
            verdict,
            front_door_before: None,
            front_door_after: None,
            findings: (verdict == Verdict::Regressed)
                .then(|| Finding {
                    cluster: "orders".to_owned(),
                    step: "metadata".to_owned(),
                    before: "node 1 at p:9093".to_owned(),
                    after: "node 1 missing".to_owned(),
                })
                .into_iter()
                .collect(),
            notes: Vec::new(),
        }],
        reverted: verdict == Verdict::Regressed,
    });
    s
}

fn judged(s: &ConfigStatus, waited: Duration) -> Judged {
    judge(&cv("new").into(), &cv("new"), s, waited, GRACE)
}

#[test]
fn a_running_analysis_is_followed_until_its_window_and_the_margin_are_over() {
    let s = status("new", Some(("new", Verdict::Running)));
    assert_eq!(judged(&s, secs(1)), Judged::Pending);
    assert_eq!(judged(&s, secs(59)), Judged::Pending);
    assert_eq!(judged(&s, secs(61)), Judged::TimedOut);
}

#[test]
fn passed_and_off_are_verdicts() {
    for verdict in [Verdict::Passed, Verdict::Off] {
        let s = status("new", Some(("new", verdict)));
        assert_eq!(judged(&s, secs(1)), Judged::Verdict(verdict));
    }
}

#[test]
fn a_regression_names_the_finding_and_the_return_to_the_version_before() {
    // The proxy returned to "old", recorded "new" as failed.
    let mut s = status("old", Some(("new", Verdict::Regressed)));
    let want = "client-side check failed: virtual cluster orders: metadata: before: node 1 at \
                p:9093; after: node 1 missing (the proxy returned to the version before by itself)";
    assert_eq!(judged(&s, secs(1)), Judged::Regressed(want.to_owned()));
    s.last_failed_version = Some(FailedVersion {
        version: cv("new").into(),
        stage: FailureStage::ClientCheck,
        reason: "virtual cluster orders: metadata: before: node 1 at p:9093; after: node 1 missing"
            .to_owned(),
        timestamp: "2026-01-01T00:00:31.000Z".to_owned(),
    });
    assert_eq!(judged(&s, secs(1)), Judged::Regressed(want.to_owned()));
    // The failure alone (the analysis since replaced) is enough.
    s.analysis = None;
    assert!(matches!(judged(&s, secs(1)), Judged::Regressed(c) if c.contains("node 1 missing")));
}

#[test]
fn another_versions_analysis_or_failure_is_not_this_ones() {
    // The analysis of the version before, passed: not this one's verdict.
    let s = status("new", Some(("old", Verdict::Passed)));
    assert_eq!(judged(&s, secs(1)), Judged::Pending);
    assert_eq!(
        judged(&s, GRACE),
        Judged::Nothing("its proxy reports no client-side analysis of the version")
    );
    // A reload failure of this version is not a client-side one.
    let mut s = status("old", None);
    s.last_failed_version = Some(FailedVersion {
        version: cv("new").into(),
        stage: FailureStage::Reload,
        reason: "port taken".to_owned(),
        timestamp: "2026-01-01T00:00:31.000Z".to_owned(),
    });
    assert_eq!(
        judged(&s, secs(1)),
        Judged::Nothing("its proxy runs another version")
    );
}

#[test]
fn renewed_files_are_followed_under_their_effective_version() {
    let renewed =
        sluice_volume::effective_version(&cv("new"), [("/tls.crt", Some("sha256:renewed"))]);
    let mut s = ConfigStatus::running(cv("new"), renewed.clone());
    let applied: AttemptedVersion = renewed.into();
    assert_eq!(
        judge(&applied, &cv("new"), &s, secs(1), GRACE),
        Judged::Pending
    );
    s.effective_version = ev("new");
    assert_eq!(
        judge(&applied, &cv("new"), &s, secs(1), GRACE),
        Judged::Nothing("its proxy runs another version")
    );
}

#[test]
fn the_first_finding_says_how_many_more() {
    let mut a = PeerAnalysis {
        version: cv("new").into(),
        verdict: Verdict::Regressed,
        findings: vec!["a".to_owned()],
        reverted: true,
    };
    assert_eq!(first_finding(&a).as_deref(), Some("a"));
    a.findings.push("b".to_owned());
    assert_eq!(first_finding(&a).as_deref(), Some("a (and 1 more)"));
    a.findings.clear();
    assert_eq!(first_finding(&a), None);
}

#[test]
fn a_version_found_in_force_is_followed_only_while_its_analysis_runs() {
    let found = |s: &ConfigStatus| judge(&cv("new").into(), &cv("new"), s, secs(0), Duration::ZERO);
    assert_eq!(
        found(&status("new", None)),
        Judged::Nothing("its proxy reports no client-side analysis of the version")
    );
    assert_eq!(
        found(&status("new", Some(("new", Verdict::Running)))),
        Judged::Pending
    );
}
