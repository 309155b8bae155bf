//! SNI routing against port per broker, both over TLS from the clients and
//! in the same proxy: one cluster routed by server name (the ClientHello
//! read before the handshake goes on with the cluster's certificate), one
//! with a port per broker, both in front of broker A. Produce (acks=1) and
//! consume throughput, the paths taking turns.

use crate::dataplane::Plan;
use crate::rig::{Path, Rig};
use crate::tls::measure;
use sluice_tools::record::{Row, Target};

const SECTION: &str = "data plane, SNI routing";

/// Runs both cases on both paths, `plan.reps` times, and emits the figures.
pub(crate) fn run(rig: &mut Rig, plan: Plan) {
    let r = measure(rig, plan, [Path::SluiceSni, Path::SluiceTls], "sni");
    for (key, case) in [
        (
            "produce1",
            "produce acks=1 over TLS: SNI port vs port per broker",
        ),
        ("consume", "consume over TLS: SNI port vs port per broker"),
    ] {
        Row::new(SECTION, case, "MB/s", r.get(key, Path::SluiceSni))
            .baseline("port per broker (TLS)", r.get(key, Path::SluiceTls))
            .target(Target::RatioAtLeast(0.95), ">= 0.95x port per broker")
            .note("same proxy, same certificate authority, same broker; the SNI path reads the ClientHello, looks the name up, then finishes the handshake")
            .emit();
    }
}
