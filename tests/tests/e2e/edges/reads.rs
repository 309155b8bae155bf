//! Admin reads never wait for a reload in progress: they see the state
//! before or after it. Before the fix one std `Mutex` was held for all of
//! prepare and commit, so a status read sent during prepare waited for the
//! commit and could never see a reload at its prepare step.

use std::time::{Duration, Instant};

use sluice_admin_api::{ReloadApplied, ReloadStage, endpoints};
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;

use super::{CLUSTERS, many, slow_dir};

#[test]
fn status_and_clusters_answer_while_a_reload_prepares() {
    let port = ports(2 * CLUSTERS);
    let proxy = Proxy::start_in(slow_dir(), &many(port, "localhost"));

    let changed = proxy.render(&many(port, "changed.proxy.local"));
    let admin = proxy.admin.clone();
    let reload = std::thread::spawn(move || {
        sluice_testkit::http::request(&admin, "POST", endpoints::RELOAD, &[], changed.as_bytes())
            .expect("reload answers")
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen_preparing = false;
    while !reload.is_finished() {
        assert!(Instant::now() < deadline, "the reload never ended");
        let status = proxy.status();
        if status.reload_in_progress_stage == Some(ReloadStage::Prepare) {
            // Another read, still during the reload: the clusters list.
            let clusters = proxy.clusters();
            assert_eq!(clusters.clusters.len(), usize::from(CLUSTERS));
            seen_preparing = true;
        }
    }
    let answer = reload.join().expect("reloader");
    assert_eq!(answer.status, 200, "{}", answer.body);
    let applied: ReloadApplied = answer.parse();
    assert_eq!(applied.clusters_modified.len(), usize::from(CLUSTERS));
    assert!(
        seen_preparing,
        "no read answered while the reload prepared ({} ms)",
        applied.duration_ms
    );
    assert_eq!(
        proxy.status().current_config_version,
        applied.config_version
    );
}
