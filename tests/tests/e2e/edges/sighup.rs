//! A SIGHUP that arrives while another reload runs is applied after it.
//! Before the fix it was dropped with a warning: the file was never applied.

use std::time::Duration;

use sluice_admin_api::ValidateAnswer;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;

use super::{NO_CHECK, black_hole, cluster, proxy_config};

#[test]
fn a_sighup_during_a_reload_is_applied_after_it() {
    let port = ports(2);
    let (_hole, hole) = black_hole();
    let mut proxy = Proxy::start(&proxy_config("", &[cluster("a", port, NO_CHECK, "")]));
    proxy.allow("upstream check failed");
    proxy.allow("reload failed");

    // A reload whose upstream check hangs on the black hole until its timeout.
    let slow = proxy_config(
        "",
        &[cluster(
            "a",
            port,
            &format!("bootstrapServers: [127.0.0.1:{hole}], checkTimeout: 3s"),
            "",
        )],
    );
    let slow = proxy.render(&slow);
    let admin = proxy.admin.clone();
    let posted = std::thread::spawn(move || {
        sluice_testkit::http::request(
            &admin,
            "POST",
            sluice_admin_api::endpoints::RELOAD,
            &[],
            slow.as_bytes(),
        )
        .expect("reload answers")
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while proxy.status().reload_in_progress_since.is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow reload never started"
        );
        std::thread::sleep(Duration::from_millis(5));
    }

    // Meanwhile the file changes and the proxy gets a SIGHUP.
    let edited = proxy
        .render(&proxy_config("", &[cluster("a", port, NO_CHECK, "")]))
        .replace("localhost", "edited.proxy.local");
    std::fs::write(&proxy.config, &edited).expect("edit the file");
    let checked = proxy.validate(&edited);
    let ValidateAnswer::Valid(valid) =
        ValidateAnswer::from_http(checked.status, checked.body.as_bytes()).expect("typed answer")
    else {
        panic!("the edited file is valid: {}", checked.body);
    };
    proxy.process().signal("HUP");

    let answer = posted.join().expect("poster");
    assert_eq!(answer.status, 500, "{}", answer.body);
    proxy.wait_for_version(valid.config_version.as_str(), Duration::from_secs(10));
}
