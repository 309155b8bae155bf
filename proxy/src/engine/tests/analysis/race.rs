//! A return to the last good version and a reload never interleave: the
//! one holding the reload slot goes first, the other answers conflict (a
//! reload) or steps aside for the newer version (a return).

use std::sync::{Arc, Mutex};

use sluice_admin_api::Verdict;
use sluice_testkit::config::version;
use sluice_testkit::ports::ports;

use super::fake::{Fake, cluster, config};
use super::{applied, metric, start, verdict, within};
use crate::engine::ReloadOutcome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_while_the_return_holds_the_slot_answers_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let port = ports(2);
    let (fake, _heard) = Fake::new();
    let good = config(&[cluster("a", port, 100, "")]);
    let engine = start(dir.path(), &good, &fake);
    // The return persists the good bytes inside the slot: hold it there.
    let (entered, mut inside) = tokio::sync::mpsc::unbounded_channel();
    let (release, held) = std::sync::mpsc::channel::<()>();
    let held = Mutex::new(held);
    let good_bytes = good.clone().into_bytes();
    let hook = move |bytes: &[u8]| {
        if bytes == good_bytes {
            let _ = entered.send(());
            let _ = held.lock().unwrap().recv();
        }
    };
    assert!(engine.set_persist(Box::new(hook)).is_ok());

    let bad = config(&[cluster("a", port, 13, "")]);
    applied(engine.reload(bad.as_bytes(), None));
    within("the return", inside.recv()).await.unwrap();
    let other = config(&[cluster("a", port, 77, "")]);
    let outcome = engine.reload(other.as_bytes(), None);
    assert!(matches!(outcome, ReloadOutcome::Busy { .. }), "{outcome:?}");
    release.send(()).unwrap();

    let analysis = verdict(&engine, &bad, Verdict::Regressed).await;
    assert!(analysis.reverted);
    let status = engine.status();
    assert_eq!(status.current_config_version.as_str(), version(&good));
    let attempt = status.last_reload_attempt.unwrap();
    assert_eq!(
        attempt.requested_version.unwrap().as_str(),
        version(&good),
        "the refused reload left the return's record alone"
    );
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_return_waiting_for_the_slot_steps_aside_for_the_reload_holding_it() {
    let dir = tempfile::tempdir().unwrap();
    let port = ports(4);
    let (fake, mut heard) = Fake::new();
    let short = "    analysis: { window: 300ms }\n";
    let good = config(&[
        cluster("a", port, 100, short),
        cluster("b", port + 2, 200, short),
    ]);
    let engine = start(dir.path(), &good, &fake);

    // a breaks; its check on the new version waits.
    fake.hold("a@13");
    let bad = config(&[
        cluster("a", port, 13, short),
        cluster("b", port + 2, 200, short),
    ]);
    applied(engine.reload(bad.as_bytes(), None));
    within("the check of a@13", async {
        while heard.entered.recv().await.unwrap() != "a@13" {}
    })
    .await;

    // A newer reload mends a and changes b; it holds the slot while its
    // baseline of b runs.
    fake.hold("b@200");
    let newer = config(&[
        cluster("a", port, 100, short),
        cluster("b", port + 2, 201, short),
    ]);
    let reloading = Arc::clone(&engine);
    let bytes = newer.clone().into_bytes();
    let reload = tokio::task::spawn_blocking(move || reloading.reload(&bytes, None));
    within("the baseline of b@200", async {
        while heard.entered.recv().await.unwrap() != "b@200" {}
    })
    .await;

    // The bad version's analysis finds the regression and wants the slot.
    fake.release("a@13");
    let compared = within("the comparison", heard.compared.recv()).await;
    assert_eq!(compared.unwrap(), "a");
    fake.release("b@200");
    applied(within("the newer reload", reload).await.unwrap());

    let analysis = verdict(&engine, &newer, Verdict::Passed).await;
    assert_eq!(analysis.previous.as_str(), version(&good));
    let judged: Vec<&str> = analysis
        .clusters
        .iter()
        .map(|c| c.cluster.as_str())
        .collect();
    assert_eq!(judged, ["b"], "a is as it was in the last good version");
    let status = engine.status();
    assert_eq!(status.current_config_version.as_str(), version(&newer));
    assert!(status.last_failed_version.is_none(), "{status:?}");
    assert_eq!(metric(&engine, "sluice_analysis_reverts_total"), Some(0.0));
    engine.shutdown().await;
}
