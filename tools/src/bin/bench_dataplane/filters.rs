//! What the topic-policy and quota filters cost (issue 32): the same proxy,
//! the same broker, two clusters: one without filters, one with a topic
//! policy that judges every request's topics and allows all the benchmark
//! does, and a quota metered on every Produce and Fetch and never reached.
//! Produce (acks=1) and consume throughput and the proxy's CPU per GB, the
//! paths taking turns, each first in every other repetition: [`MORE`]
//! times the other sections' repetitions, of runs half their length (240
//! of 64 MB by default).

use crate::dataplane::Plan;
use crate::rig::{Path, Rig};
use crate::tls::measure;
use sluice_tools::record::{Row, Target};

const SECTION: &str = "data plane, filters";
const CPU: &str = "mcore/(MB/s)";
/// How many times more repetitions than the other sections. The two
/// paths differ by far less than one run's spread: on 127.0.0.1 the
/// proxy's CPU per GB varies 10-20% from one run to the next (the loopback
/// receive work the kernel charges to whichever thread sent, and the splice
/// calls' own cost, vary with timing; a profile shows the filters' own code
/// under 1% of the proxy's samples), and runs are independent (the two
/// paths' figures in one repetition correlate weakly, 0.1-0.5), so only the
/// count of repetitions narrows the interval: 15 of 512 MB gave 95%
/// intervals about 0.2 wide; 60 of 64 MB, 0.12-0.16 wide, in 85 seconds.
const MORE: usize = 16;

/// Runs both cases on both paths, `plan.reps` times, and emits the figures.
pub(crate) fn run(rig: &mut Rig, plan: Plan) {
    let (f, s) = (Path::SluiceFiltered, Path::Sluice);
    let plan = Plan {
        megabytes: (plan.megabytes / 2).max(16),
        reps: plan.reps * MORE,
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
