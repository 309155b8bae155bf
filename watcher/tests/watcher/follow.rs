//! After applying a version, the watcher follows its proxy's client-side
//! analysis (`fleet::follow::after_apply`) against a stand-in proxy on
//! `127.0.0.1:0` whose status answers follow a script: a regression halts
//! the rollout here (the halt metric, the version remembered halted, the
//! Event's message with the finding); a pass does not; newer content ends
//! the wait.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use sluice_admin_api::{
    Analysis, ClusterAnalysis, ConfigStatus, ConfigVersion, FailedVersion, FailureStage, Finding,
    Verdict, endpoints,
};
use sluice_watcher::client::ProxyClient;
use sluice_watcher::decide::Memory;
use sluice_watcher::fleet::follow::{AfterApply, after_apply};
use sluice_watcher::fleet::gate;
use sluice_watcher::fleet::peers::PeerSource;
use sluice_watcher::fleet::rollout::{FleetSettings, Rollout};
use sluice_watcher::heartbeat::Heartbeat;
use sluice_watcher::metrics::Metrics;
use sluice_watcher::volume::Content;
use tokio::sync::watch;

fn cv(name: &str) -> ConfigVersion {
    sluice_volume::config_version(name.as_bytes())
}

/// Status answers in order; the last one stays.
#[derive(Clone)]
struct Script(Arc<Mutex<VecDeque<ConfigStatus>>>);

async fn status(State(s): State<Script>) -> axum::Json<ConfigStatus> {
    let mut answers = s.0.lock().unwrap();
    let answer = if answers.len() > 1 {
        answers.pop_front()
    } else {
        answers.front().cloned()
    };
    axum::Json(answer.expect("a scripted answer"))
}

async fn stand_in(answers: Vec<ConfigStatus>) -> String {
    let script = Script(Arc::new(Mutex::new(answers.into())));
    let app = Router::new()
        .route(endpoints::STATUS, get(status))
        .with_state(script);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// A proxy running `current`, its last analysis of "new" at `verdict`.
fn proxy(current: &str, verdict: Verdict) -> ConfigStatus {
    let mut s = ConfigStatus::running(
        cv(current),
        sluice_volume::effective_version(&cv(current), []),
    );
    s.instance = "pod-0".to_owned();
    s.ready = true;
    let findings = match verdict {
        Verdict::Regressed => vec![Finding {
            cluster: "orders".to_owned(),
            step: "bootstrap".to_owned(),
            before: "orders.svc:19092 worked".to_owned(),
            after: "nowhere.svc:19092: connection refused".to_owned(),
        }],
        _ => Vec::new(),
    };
    if verdict == Verdict::Regressed {
        s.last_failed_version = Some(FailedVersion {
            version: cv("new").into(),
            stage: FailureStage::ClientCheck,
            reason: findings[0].to_string(),
            timestamp: "2026-01-01T00:00:31.000Z".to_owned(),
        });
    }
    s.analysis = Some(Analysis {
        version: cv("new").into(),
        previous: cv("old"),
        verdict,
        started_at: "2026-01-01T00:00:00.000Z".to_owned(),
        window_ms: 30_000,
        clusters: vec![ClusterAnalysis {
            cluster: "orders".to_owned(),
            verdict,
            front_door_before: None,
            front_door_after: None,
            findings,
            notes: Vec::new(),
        }],
        reverted: verdict == Verdict::Regressed,
    });
    s
}

fn content(name: &str) -> Content {
    Content {
        bytes: Some(name.as_bytes().to_vec()),
        digest: Some(cv(name)),
        data_dir: None,
        read_at: SystemTime::now(),
    }
}

/// Follows "new" through `answers`; the metrics, the memory and the end.
async fn follow(
    answers: Vec<ConfigStatus>,
    newer: impl FnOnce(&watch::Sender<Content>),
) -> (Metrics, Memory, AfterApply) {
    let url = stand_in(answers).await;
    let settings = FleetSettings {
        source: PeerSource::Urls(vec![url.clone()]),
        gate: gate::Settings {
            canary_soak: Duration::from_secs(30),
            peer_timeout: Duration::from_secs(30),
        },
        poll: Duration::from_millis(10),
        call_timeout: Duration::from_secs(2),
        token: None,
        slot_override: None,
        tls: Default::default(),
    };
    let mut rollout = Rollout::new(settings, Duration::ZERO, Duration::ZERO);
    let own = ProxyClient::new(&url, None).expect("client");
    let (metrics, heartbeat, mut memory) =
        (Metrics::new(), Heartbeat::default(), Memory::default());
    let (tx, mut rx) = watch::channel(content("new"));
    rx.borrow_and_update();
    newer(&tx);
    let tools = (&own, &metrics, &heartbeat);
    let end = after_apply(&mut rollout, tools, &mut rx, &mut memory, &cv("new"), false).await;
    (metrics, memory, end)
}

#[tokio::test]
async fn a_regression_found_while_following_halts_the_rollout_here() {
    let running = proxy("new", Verdict::Running);
    let (metrics, memory, end) = follow(
        vec![running.clone(), running, proxy("old", Verdict::Regressed)],
        |_| {},
    )
    .await;
    let AfterApply::Halted(message) = end else {
        panic!("{end:?}")
    };
    assert!(
        message.contains(
            "failed: client-side check failed: virtual cluster orders: bootstrap: before: \
             orders.svc:19092 worked; after: nowhere.svc:19092: connection refused (the proxy \
             returned to the version before by itself)"
        ),
        "{message}"
    );
    assert!(metrics.fleet.is_halted());
    assert_eq!(memory.halted, Some(cv("new").into()));
    let text = metrics.encode();
    assert!(text.contains("sluice_watcher_rollout_halted 1"), "{text}");
    assert!(
        text.contains("sluice_watcher_analyses_total{verdict=\"regressed\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn a_pass_halts_nothing() {
    let (metrics, memory, end) = follow(
        vec![
            proxy("new", Verdict::Running),
            proxy("new", Verdict::Passed),
        ],
        |_| {},
    )
    .await;
    assert_eq!(end, AfterApply::Done);
    assert!(!metrics.fleet.is_halted());
    assert_eq!(memory.halted, None);
    let text = metrics.encode();
    assert!(
        text.contains("sluice_watcher_analysis_info{version=\"sha256:"),
        "{text}"
    );
    assert!(text.contains("verdict=\"passed\"} 1"), "{text}");
}

#[tokio::test]
async fn newer_content_ends_the_wait() {
    let (metrics, _, end) = follow(vec![proxy("new", Verdict::Running)], |tx| {
        tx.send(content("newer")).expect("send");
    })
    .await;
    assert!(
        matches!(&end, AfterApply::Superseded(c) if c.digest == Some(cv("newer"))),
        "{end:?}"
    );
    assert!(!metrics.fleet.is_halted());
}
