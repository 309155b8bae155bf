//! What the topic-policy and quota filters cost (issue 32): the same proxy,
//! the same broker, two clusters: one without filters, one with a topic
//! policy that judges every request's topics and allows all the benchmark
//! does, and a quota metered on every Produce and Fetch and never reached.
//! Produce (acks=1) and consume throughput and the proxy's CPU per GB, the
//! paths taking turns, each first in every other repetition, with runs
//! [`LONGER`] times the other sections' (512 MB by default).

use crate::dataplane::Plan;
use crate::rig::{Path, Rig};
use crate::tls::measure;
use sluice_tools::record::{Row, Target};

const SECTION: &str = "data plane, filters";
const CPU: &str = "mcore/(MB/s)";
/// How many times longer each run is than the other sections' runs. The
/// two paths differ by far less than their run-to-run spread: two runs of
/// 15 repetitions of 128 MB (2026-11-26) put the proxy's CPU per GB at
/// 1.10x and 0.99x for produce, 0.98x and 1.08x for consume, each 95%
/// interval about 0.2 wide, while a profile gave the filters' own code
/// under 1% of the proxy's CPU samples. Longer runs narrow the spread of
/// each repetition's figure.
const LONGER: u32 = 4;

/// Runs both cases on both paths, `plan.reps` times, and emits the figures.
pub(crate) fn run(rig: &mut Rig, plan: Plan) {
    let (f, s) = (Path::SluiceFiltered, Path::Sluice);
    let plan = Plan {
        megabytes: plan.megabytes * LONGER,
        ..plan
    };
    let r = measure(rig, plan, [f, s], "filters");
    let faster = (Target::RatioAtLeast(0.97), ">= 0.97x no filter");
    let cheaper = (Target::RatioAtMost(1.0 / 0.97), "<= 1.03x no filter");
    for (key, case, unit, (target, words)) in [
        (
            "produce1",
            "produce acks=1: topic policy + quota vs no filter",
            "MB/s",
            faster,
        ),
        (
            "consume",
            "consume: topic policy + quota vs no filter",
            "MB/s",
            faster,
        ),
        (
            "produce1 cpu",
            "proxy CPU per GB, produce acks=1: topic policy + quota vs no filter",
            CPU,
            cheaper,
        ),
        (
            "consume cpu",
            "proxy CPU per GB, consume: topic policy + quota vs no filter",
            CPU,
            cheaper,
        ),
    ] {
        Row::new(SECTION, case, unit, r.get(key, f))
            .baseline("no filter", r.get(key, s))
            .target(target, words)
            .note("same proxy and broker; the policy reads each Produce's and Fetch's topic names and denies none; the quota meters every byte and throttles none")
            .emit();
    }
}
