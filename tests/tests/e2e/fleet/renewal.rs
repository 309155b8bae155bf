//! A renewed certificate is a rollout like any other (the certificates
//! issue): with the configuration's bytes unchanged on every pod, a new pair
//! in each pod's Secret-style volume reaches the canary first, then, after
//! the soak, one slot at a time; a pair whose key does not match fails at
//! the canary and no other pod validates or reloads it. Before, the gate
//! compared configuration versions only: every pod ran that version already,
//! so every pod applied the renewed files at once, a bad pair included.

use std::time::Duration;

use sluice_admin_api::ConfigStatus;
use sluice_testkit::certs::{Ca, Leaf};
use sluice_tests::fleet::{Fleet, window};

fn pair(cert: &Leaf, key: &Leaf) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("tls.crt", cert.cert.clone().into_bytes()),
        ("tls.key", key.key.clone().into_bytes()),
    ]
}

fn files<'a>(pair: &'a [(&'static str, Vec<u8>)]) -> Vec<(&'static str, &'a [u8])> {
    pair.iter().map(|(k, v)| (*k, v.as_slice())).collect()
}

fn halted(fleet: &Fleet, i: usize) -> Option<f64> {
    fleet.watcher_metric(i, "sluice_watcher_rollout_halted")
}

#[test]
fn a_renewed_certificate_rolls_out_canary_first_and_a_mismatched_pair_halts_at_the_canary() {
    let ca = Ca::new("fleet");
    let (first, second, third) = (
        ca.server("fleet", 1),
        ca.server("fleet", 2),
        ca.server("fleet", 3),
    );
    let mut fleet = Fleet::start_tls(
        &[
            "--stagger",
            "0s",
            "--jitter",
            "0s",
            "--canary-soak",
            "1s",
            "--peer-timeout",
            "10s",
        ],
        &files(&pair(&first, &first)),
    );
    let before: Vec<ConfigStatus> = (0..3).map(|i| fleet.status(i).expect("status")).collect();
    assert!(
        before[0].files.iter().any(|f| f == "secret/tls.crt"),
        "{:?}",
        before[0].files
    );

    // A certificate with another certificate's key, on every pod.
    fleet.swap_secret_all(&files(&pair(&second, &third)));
    fleet.wait(
        "every watcher to report the halt",
        Duration::from_secs(60),
        |f| (0..3).all(|i| halted(f, i) == Some(1.0)),
    );
    let canary = fleet.status(0).expect("status");
    let failed = canary.last_failed_version.expect("the canary kept it");
    assert_ne!(
        failed.version, canary.current_config_version,
        "a failure of renewed files is never pinned on the configuration in force"
    );
    assert_eq!(canary.effective_version, before[0].effective_version);
    fleet.assert_only_the_canary_was_asked(&before);

    // A good renewal clears the halt and rolls out canary first.
    fleet.swap_secret_all(&files(&pair(&second, &second)));
    fleet.wait(
        "all three to run the renewed pair",
        Duration::from_secs(60),
        |f| {
            let now: Vec<_> = (0..3)
                .filter_map(|i| f.status(i).map(|s| s.effective_version))
                .collect();
            now.len() == 3
                && now.iter().all(|e| *e == now[0])
                && now[0] != before[0].effective_version
        },
    );
    let statuses: Vec<ConfigStatus> = (0..3).map(|i| fleet.status(i).expect("status")).collect();
    let windows: Vec<(u128, u128)> = statuses.iter().map(window).collect();
    assert!(
        windows[0].1 + 1000 <= windows[1].0,
        "slot 1 after the canary and its soak: {windows:?}"
    );
    assert!(
        windows[1].1 <= windows[2].0,
        "slot 2 after slot 1: {windows:?}"
    );
    for (i, s) in statuses.iter().enumerate() {
        assert_eq!(
            s.current_config_version, before[i].current_config_version,
            "the configuration's bytes never changed"
        );
        assert_eq!(halted(&fleet, i), Some(0.0), "pod {i}: the halt is cleared");
    }
}
