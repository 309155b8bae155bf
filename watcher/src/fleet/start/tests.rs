//! The start decision as a table: peers' statuses and the version held in,
//! release / from a peer / release alone out.

use sluice_admin_api::{Analysis, FailedCluster, FailedVersion, FailureStage};

use super::*;

fn v(n: u8) -> ConfigVersion {
    sluice_volume::config_version(&[n])
}

/// A healthy peer `instance` running version `n`.
fn peer(instance: &str, n: u8) -> Answered {
    let version = v(n);
    let effective = sluice_volume::effective_version(&version, []);
    let mut status = ConfigStatus::running(version, effective);
    status.instance = instance.to_owned();
    status.ready = true;
    Answered {
        url: format!("http://{instance}:9190"),
        status,
    }
}

/// `p`, changed by `f`.
fn with(mut p: Answered, f: impl FnOnce(&mut ConfigStatus)) -> Answered {
    f(&mut p.status);
    p
}

/// An analysis of version `n` with `verdict`.
fn analysis(n: u8, verdict: Verdict) -> impl FnOnce(&mut ConfigStatus) {
    move |s| {
        s.analysis = Some(Analysis {
            version: v(n).into(),
            previous: v(0),
            verdict,
            started_at: "2026-01-01T00:00:00Z".to_owned(),
            window_ms: 30_000,
            clusters: Vec::new(),
            reverted: false,
        });
    }
}

/// Version `n` recorded as failed.
fn failed(n: u8) -> impl FnOnce(&mut ConfigStatus) {
    move |s| {
        s.last_failed_version = Some(FailedVersion {
            version: v(n).into(),
            stage: FailureStage::UpstreamCheck,
            reason: "upstream check failed".to_owned(),
            timestamp: "2026-01-01T00:00:00Z".to_owned(),
        });
    }
}

fn from(instance: &str, n: u8) -> Start {
    Start::FromPeer {
        instance: instance.to_owned(),
        url: format!("http://{instance}:9190"),
        version: v(n),
    }
}

fn release(by: &str) -> Start {
    Start::Release { by: by.to_owned() }
}

const ME: &str = "pod-b";

struct Case {
    what: &'static str,
    held: u8,
    peers: Vec<Answered>,
    want: Start,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            what: "a healthy peer runs the version held: release",
            held: 1,
            peers: vec![peer("pod-a", 1), peer("pod-c", 1)],
            want: release("pod-a"),
        },
        Case {
            what: "halted: the canary failed the version held, the others run the good one",
            held: 2,
            peers: vec![with(peer("pod-a", 1), failed(2)), peer("pod-c", 1)],
            want: from("pod-a", 1),
        },
        Case {
            what: "a peer that runs the version held but another peer failed it: halted, not vouched for",
            held: 2,
            peers: vec![with(peer("pod-a", 1), failed(2)), peer("pod-c", 2)],
            want: from("pod-a", 1),
        },
        Case {
            what: "the canary reverted (its analysis of the bad version regressed): it vouches for the one it runs",
            held: 2,
            peers: vec![
                with(
                    with(peer("pod-a", 1), analysis(2, Verdict::Regressed)),
                    failed(2),
                ),
                peer("pod-c", 1),
            ],
            want: from("pod-a", 1),
        },
        Case {
            what: "the canary's analysis of the version held still runs: the others' version",
            held: 2,
            peers: vec![
                with(peer("pod-a", 2), analysis(2, Verdict::Running)),
                peer("pod-c", 1),
            ],
            want: from("pod-c", 1),
        },
        Case {
            what: "an analysis passed or off vouches",
            held: 2,
            peers: vec![
                with(peer("pod-a", 2), analysis(2, Verdict::Passed)),
                with(peer("pod-c", 2), analysis(2, Verdict::Off)),
            ],
            want: release("pod-a"),
        },
        Case {
            what: "every pod restarted at once: every peer held, nobody vouches",
            held: 2,
            peers: vec![
                with(peer("pod-a", 2), |s| s.held = true),
                with(peer("pod-c", 1), |s| s.held = true),
            ],
            want: Start::ReleaseAlone,
        },
        Case {
            what: "no peer answered",
            held: 2,
            peers: vec![],
            want: Start::ReleaseAlone,
        },
        Case {
            what: "unready, stopping, or a cluster failed since its version: no voice",
            held: 2,
            peers: vec![
                with(peer("pod-a", 1), |s| s.ready = false),
                with(peer("pod-c", 1), |s| s.stopping = true),
                with(peer("pod-d", 1), |s| {
                    s.clusters_failed = vec![FailedCluster {
                        name: "orders".to_owned(),
                        error: "bind".to_owned(),
                        since: "2026-01-01T00:00:00Z".to_owned(),
                        since_current_version: true,
                    }];
                }),
            ],
            want: Start::ReleaseAlone,
        },
        Case {
            what: "its own entry (held, or listed as healthy under another URL) is never a voice",
            held: 2,
            peers: vec![peer(ME, 2), peer("pod-a", 1)],
            want: from("pod-a", 1),
        },
        Case {
            what: "two good versions: the one more peers vouch for",
            held: 3,
            peers: vec![peer("pod-a", 1), peer("pod-c", 2), peer("pod-d", 2)],
            want: from("pod-c", 2),
        },
        Case {
            what: "two good versions, as many voices: the first instance's",
            held: 3,
            peers: vec![peer("pod-d", 2), peer("pod-a", 1)],
            want: from("pod-a", 1),
        },
        Case {
            what: "an unnamed peer (not answering with a name) is no voice",
            held: 2,
            peers: vec![with(peer("x", 1), |s| s.instance.clear())],
            want: Start::ReleaseAlone,
        },
    ]
}

#[test]
fn every_case_decides_as_the_table_says() {
    for c in cases() {
        assert_eq!(decide(ME, &v(c.held), &c.peers), c.want, "{}", c.what);
    }
}

#[test]
fn an_analysis_of_another_version_does_not_count_against_the_one_run() {
    let reverted = with(peer("pod-a", 1), analysis(2, Verdict::Regressed));
    assert_eq!(vouched(&reverted.status), Some(&v(1)));
    let judging = with(peer("pod-a", 1), analysis(1, Verdict::Regressed));
    assert_eq!(vouched(&judging.status), None);
}
