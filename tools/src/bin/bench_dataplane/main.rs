//! The data-plane and reload-under-load benchmark behind `scripts/bench`:
//! rdkafka load (confluent-kafka in `tests/clients/bench_load.py`) direct to
//! tansu, through sluice-proxy and through haproxy, interleaved; requests on
//! an unchanged cluster during 100 reloads; the broker choice; the same
//! throughput with TLS from the clients (`tls`); SNI routing against port
//! per broker over TLS (`sni`); a topic policy and a quota against no
//! filter (`filters`); and RSS per idle connection with 10,000
//! connections (`memory`). Not run unless named: the record-size sweep,
//! quiet and beside a CPU hog (`sweep`), and the system calls and context
//! switches per request of each proxy (`syscalls`); the latency clients three
//! at once against one per broker (`tail`).
//!
//! `bench_dataplane [--reps N] [--megabytes N] [--rate N] [--latency-secs N]
//! [--connections N] [--requests N] [--size BYTES (the sweep's one size)]
//! [--only dataplane,tls,sni,filters,identity,tenancy,handshakes,memory,reload,broker,sweep,syscalls,tail]` (run it
//! through `scripts/bench`, which builds the release binaries, installs
//! haproxy and raises the open-file limit). Figures go to stdout as
//! `BENCH {json}` lines, progress to stderr. `bench_dataplane --hog` is the
//! sweep's CPU hog: a busy loop, until killed.

mod broker;
mod dataplane;
mod filters;
mod haproxy;
mod hog;
mod identity;
mod memory;
mod reload;
mod rig;
mod sni;
mod sweep;
mod syscalls;
mod tail;
mod tenancy;
mod tls;

use dataplane::Plan;
use rig::Rig;

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--hog") {
        hog::spin();
    }
    let mut plan = Plan {
        reps: 7,
        megabytes: 256,
        rate: 500,
        latency_secs: 8,
        size: None,
    };
    let mut connections = 10_000;
    let mut requests = 500;
    let mut only: Vec<String> = [
        "dataplane",
        "tls",
        "sni",
        "filters",
        "identity",
        "tenancy",
        "handshakes",
        "memory",
        "reload",
        "broker",
    ]
    .map(String::from)
    .to_vec();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        let number = |v: String| {
            v.parse::<u32>()
                .unwrap_or_else(|_| usage(&format!("not a number: {v}")))
        };
        match flag.as_str() {
            "--reps" => plan.reps = number(value()).max(1) as usize,
            "--megabytes" => plan.megabytes = number(value()).max(1),
            "--rate" => plan.rate = number(value()).max(1),
            "--latency-secs" => plan.latency_secs = number(value()).max(1),
            "--size" => plan.size = Some(sweep::size(&value()).unwrap_or_else(|e| usage(&e))),
            "--connections" => connections = number(value()).max(1) as usize,
            "--requests" => requests = number(value()).max(1) as usize,
            "--only" => only = value().split(',').map(str::to_owned).collect(),
            _ => usage(&format!("unknown argument {flag}")),
        }
    }
    let mut rig = Rig::start();
    run_sections(&mut rig, &only, plan, (connections, requests));
    rig.proxy.assert_clean_logs();
}

/// Runs the sections `only` names, in the suite's order.
fn run_sections(
    rig: &mut Rig,
    only: &[String],
    plan: Plan,
    (connections, requests): (usize, usize),
) {
    let rig = &mut *rig;
    if only.iter().any(|s| s == "broker") {
        broker::run(rig, plan.reps.min(3), plan.megabytes);
    }
    if only.iter().any(|s| s == "dataplane") {
        dataplane::run(rig, plan);
    }
    if only.iter().any(|s| s == "tls") {
        tls::run(rig, plan);
    }
    if only.iter().any(|s| s == "sni") {
        sni::run(rig, plan);
    }
    if only.iter().any(|s| s == "filters") {
        filters::run(rig, plan);
    }
    if only.iter().any(|s| s == "identity") {
        identity::run(rig, plan);
    }
    if only.iter().any(|s| s == "tenancy") {
        tenancy::run(rig, plan);
    }
    if only.iter().any(|s| s == "handshakes") {
        identity::handshakes(rig, plan.reps.min(5));
    }
    if only.iter().any(|s| s == "memory") {
        memory::run(rig, plan.reps.min(3), connections);
    }
    if only.iter().any(|s| s == "reload") {
        reload::run(rig, plan.reps.min(3), plan.rate);
    }
    if only.iter().any(|s| s == "sweep") {
        sweep::run(rig, plan);
    }
    if only.iter().any(|s| s == "tail") {
        tail::run(rig, plan);
    }
    if only.iter().any(|s| s == "syscalls") {
        syscalls::run(rig, requests);
    }
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "bench_dataplane: {problem}\nusage: bench_dataplane [--reps N] [--megabytes N] [--rate N] [--latency-secs N] [--connections N] [--requests N] [--size 100|1024|4096|16384] [--only dataplane,tls,sni,filters,identity,tenancy,handshakes,memory,reload,broker,sweep,syscalls,tail] | --hog"
    );
    std::process::exit(2)
}
