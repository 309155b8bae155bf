//! What knowing the client costs (issue 47): throughput after the
//! handshake on three clusters of one proxy, each against the TLS cluster
//! without identity (or, for the policy, against mTLS without one)
//! (section `identity`); and full TLS handshakes and SCRAM logins per
//! CPU-second of the proxy, sluice-proxy with and without client
//! certificates and with SCRAM over TLS, against haproxy terminating TLS
//! (section `handshakes`).
//!
//! - mTLS: the client presents a certificate; the proxy verifies it and
//!   maps its subject to a principal.
//! - SCRAM: the proxy terminates SASL/SCRAM-SHA-512 over TLS.
//! - a topic policy keyed on that principal, judging every request.
//!
//! Throughput runs take turns as in the TLS section ([`MORE`] times its
//! repetitions, of half-length runs); handshakes are `openssl s_time -new`
//! (one connection at a time, each a full handshake, closed at once), and
//! SCRAM logins `scram_logins.py` (one connection each: a TLS handshake,
//! then SCRAM-SHA-512, closed once it succeeded).

use std::process::Command;

use sluice_tests::python;

use crate::dataplane::Plan;
use crate::rig::{Path, Rig, cpu_seconds};
use crate::tls::measure;
use sluice_tools::record::{Row, Target};

const SECTION: &str = "data plane, identity";
/// How many times more repetitions than the other sections (of runs half
/// their length): the figures differ by a few per cent.
const MORE: usize = 2;
/// Seconds of handshakes per path and repetition.
const HANDSHAKE_SECS: &str = "5";

/// Runs the throughput pairs and the handshakes, and emits the figures.
pub(crate) fn run(rig: &mut Rig, plan: Plan) {
    let plan = Plan {
        megabytes: (plan.megabytes / 2).max(16),
        reps: plan.reps * MORE,
        ..plan
    };
    let pairs = [
        (
            [Path::SluiceMtls, Path::SluiceTls],
            "mTLS principal",
            "TLS without identity",
        ),
        (
            [Path::SluiceScram, Path::SluiceTls],
            "SCRAM terminated",
            "TLS without identity",
        ),
        (
            [Path::SluiceMtlsPolicy, Path::SluiceMtls],
            "principal-keyed policy",
            "mTLS, no policy",
        ),
    ];
    let at_least = Target::RatioAtLeast(0.97);
    for (paths, what, base) in pairs {
        let r = measure(rig, plan, paths, what);
        for (key, case) in [("produce1", "produce acks=1"), ("consume", "consume")] {
            Row::new(
                SECTION,
                format!("{case}: {what} vs {base}"),
                "MB/s",
                r.get(key, paths[0]),
            )
            .baseline(base, r.get(key, paths[1]))
            .target(at_least, ">= 0.97x")
            .note("same proxy, broker and client; TLS from the client on both paths")
            .emit();
        }
    }
}

/// Full handshakes per CPU-second of the proxy in the middle: sluice-proxy
/// with TLS, with mTLS (a certificate verified and mapped), with SCRAM
/// over TLS (a login each), and haproxy with TLS, `reps` runs each,
/// taking turns.
pub(crate) fn handshakes(rig: &Rig, reps: usize) {
    let paths = [
        Path::SluiceTls,
        Path::SluiceMtls,
        Path::SluiceScram,
        Path::HaproxyTls,
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    for rep in 0..reps {
        eprintln!("handshakes: repetition {} of {reps}", rep + 1);
        for (i, &path) in paths.iter().enumerate() {
            let rate = match path {
                Path::SluiceScram => login_rate(rig),
                _ => handshake_rate(rig, path),
            };
            rates[i].push(rate);
        }
    }
    let unit = "handshakes/CPU-s";
    let note = "one connection at a time, each closed at once (openssl s_time -new; SCRAM: scram_logins.py, a TLS handshake and a SCRAM-SHA-512 login each); per CPU-second of the proxy in the middle (all its threads)";
    let cases = [
        (0, "TLS: sluice-proxy vs haproxy"),
        (1, "mTLS (verified, mapped): sluice-proxy vs haproxy TLS"),
    ];
    for (i, case) in cases {
        let case = format!("handshakes per proxy CPU-second, {case}");
        Row::new(SECTION, case, unit, rates[i].clone())
            .baseline("haproxy TLS", rates[3].clone())
            .target(Target::RatioAtLeast(1.0), ">= 1.00x haproxy")
            .note(note)
            .emit();
    }
    // haproxy has no SCRAM: the login's cost is read against the proxy's
    // own TLS handshake, with no target.
    let case =
        "logins per proxy CPU-second, TLS + SCRAM-SHA-512: sluice-proxy vs its TLS handshakes";
    Row::new(SECTION, case, "logins/CPU-s", rates[2].clone())
        .baseline("sluice-proxy TLS", rates[0].clone())
        .note(note)
        .emit();
}

/// One `s_time` run on `path`: handshakes per CPU-second of its proxy.
fn handshake_rate(rig: &Rig, path: Path) -> f64 {
    let pid = rig.middle(path).expect("a proxy in the middle");
    let mut cmd = Command::new("openssl");
    cmd.args([
        "s_time",
        "-new",
        "-time",
        HANDSHAKE_SECS,
        "-connect",
        rig.bootstrap(path),
    ]);
    cmd.arg("-CAfile").arg(&rig.pki.ca);
    if path == Path::SluiceMtls {
        cmd.arg("-cert").arg(&rig.pki.client_cert);
        cmd.arg("-key").arg(&rig.pki.client_key);
    }
    let before = cpu_seconds(pid);
    let out = cmd.output().expect("run openssl s_time");
    let cpu = cpu_seconds(pid) - before;
    let text = String::from_utf8_lossy(&out.stdout);
    // "1234 connections in 5.01s; 246.3 connections/user sec, ..."
    let count = text
        .lines()
        .find(|l| {
            l.contains("connections in") && l.contains("real seconds")
                || l.contains("connections in")
        })
        .and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("s_time printed no count: {text}"));
    count / cpu
}

/// One `scram_logins.py` run on the SCRAM path: logins per CPU-second of
/// the proxy.
fn login_rate(rig: &Rig) -> f64 {
    let pid = rig.middle(Path::SluiceScram).expect("the proxy");
    let [user, password] = crate::rig::SCRAM_USER;
    let ca = rig.pki.ca.display().to_string();
    let args = [
        rig.bootstrap(Path::SluiceScram),
        user,
        password,
        HANDSHAKE_SECS,
        "--ca",
        &ca,
    ];
    let before = cpu_seconds(pid);
    let report = python::run_json("scram_logins.py", &args, std::time::Duration::from_secs(60));
    let cpu = cpu_seconds(pid) - before;
    let logins = report["logins"].as_f64().expect("a count of logins");
    logins / cpu
}
