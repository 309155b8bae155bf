//! Benign changes keep rolling out under the client-side analysis: a new
//! `limits.maxConnections` under steady traffic reaches every pod with no
//! client error at all (no failed or lost message, not even a reconnect: a
//! change of limits applies in place, so no connection is drained) and no
//! halt, and so it does on "hairpin" pods, whose
//! advertised address is never reachable from inside their own namespace
//! (a load balancer's, as behind many cloud load balancers): a front-door
//! step that never worked is a note, never a reason to halt.

use std::time::Duration;

use sluice_admin_api::Verdict;
use sluice_testkit::netns::Net;
use sluice_testkit::process::Proc;
use sluice_tests::fleet::{Cluster, Fleet, Spec, broker, config_with};
use sluice_tests::python;

use super::super::{gated, steady_on};

/// The load balancer's address, in the hub: it forwards the gateway's
/// ports to pod 0.
const BALANCER: &str = "198.18.0.100";

const FLAGS: [&str; 8] = [
    "--stagger",
    "0s",
    "--jitter",
    "0s",
    "--canary-soak",
    "3s",
    "--peer-timeout",
    "10s",
];

/// Publishes `next` on every pod and asserts it reaches all of them with
/// no halt, no failure and no connection drained; `client` must then
/// report no lost message and no error (a reconnect is one).
fn rolls_out_cleanly(fleet: &mut Fleet, next: &str, client: python::Steady) {
    let version = fleet.swap_all(next);
    fleet.wait("every pod to run it", Duration::from_secs(120), |f| {
        (0..f.pods.len()).all(|i| f.runs(i, &version))
    });
    for i in 0..fleet.pods.len() {
        let s = fleet.status(i).expect("status");
        assert_eq!(s.last_failed_version, None, "pod {i}");
        assert!(
            s.analysis
                .as_ref()
                .is_none_or(|a| a.verdict != Verdict::Regressed),
            "pod {i}: {:?}",
            s.analysis
        );
        assert_eq!(
            fleet.watcher_metric(i, "sluice_watcher_rollout_halted"),
            Some(0.0),
            "pod {i}"
        );
        for result in ["clean", "forced"] {
            let series = format!(
                "sluice_drained_connections_total{{cluster=\"orders\",result=\"{result}\"}}"
            );
            assert_eq!(
                fleet.proxy_metric(i, &series).unwrap_or(0.0),
                0.0,
                "pod {i}: applied in place, nothing drains"
            );
        }
    }
    let report = client.finish();
    assert_eq!(report["lost"], 0, "{report}");
    assert_eq!(report["error_count"], 0, "client errors: {report}");
}

#[test]
fn a_benign_change_under_steady_traffic_reaches_every_pod_with_no_client_error() {
    let mut fleet = gated("3s", "10s");
    let client = steady_on(&fleet, 0);
    let next = Cluster {
        max_connections: Some(5000),
        ..Cluster::default()
    };
    rolls_out_cleanly(&mut fleet, &config_with(&broker(), 1, &next), client);
}

/// Whether a connection to the balancer's bootstrap port works from
/// inside pod `i`.
fn reaches_the_balancer(fleet: &Fleet, i: usize) -> bool {
    fleet
        .net
        .command(&fleet.pods[i].ns, "bash")
        .args(["-c", &format!("exec 3<>/dev/tcp/{BALANCER}/19092")])
        .output()
        .expect("bash")
        .status
        .success()
}

/// A TCP forwarder in the hub from the balancer's `port` to pod 0's.
fn forward(fleet: &Fleet, port: u16) -> Proc {
    let mut cmd = fleet.net.command(&fleet.net.hub(), "socat");
    cmd.args(["-d", "-d"])
        .arg(format!("TCP-LISTEN:{port},bind={BALANCER},reuseaddr,fork"))
        .arg(format!("TCP:{}:{port}", Net::pod_addr(0)));
    let mut p = Proc::spawn(&format!("balancer-{port}"), cmd);
    p.wait_for_line("listening on", Duration::from_secs(10));
    p
}

#[test]
fn hairpin_pods_whose_advertised_address_they_cannot_reach_still_roll_out_a_benign_change() {
    let hairpin = Cluster {
        advertised_host: BALANCER.to_owned(),
        ..Cluster::default()
    };
    let mut fleet = Fleet::launch(Spec {
        initial: config_with(&broker(), 0, &hairpin),
        ..Spec::new(&FLAGS)
    });
    let hub = fleet.net.hub();
    fleet.net.ip(
        &hub,
        &["addr", "add", &format!("{BALANCER}/32"), "dev", "br0"],
    );
    let _balancer = [forward(&fleet, 19092), forward(&fleet, 19093)];
    for i in 0..fleet.pods.len() {
        let ns = fleet.pods[i].ns.clone();
        fleet.net.ip(
            &ns,
            &["route", "add", "unreachable", &format!("{BALANCER}/32")],
        );
        assert!(!reaches_the_balancer(&fleet, i), "pod {i} is a hairpin pod");
    }
    // A client outside the pods, through the balancer, as the world sees it.
    let client = python::Steady::start_in(&hub, &format!("{BALANCER}:19092"), "fleet", "hairpin");
    let next = Cluster {
        max_connections: Some(5000),
        ..hairpin
    };
    rolls_out_cleanly(&mut fleet, &config_with(&broker(), 1, &next), client);
    for i in 0..fleet.pods.len() {
        assert!(!reaches_the_balancer(&fleet, i), "pod {i} still a hairpin");
    }
}
