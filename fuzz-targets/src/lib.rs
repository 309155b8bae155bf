//! The fuzz targets' bodies: each takes any bytes and panics only on a bug
//! (an assertion of what must hold, or a crash). One definition, run two
//! ways: `fuzz/` wraps each in `fuzz_target!` for cargo fuzz (libFuzzer,
//! sanitizers, coverage-guided: `scripts/fuzz`), and this crate's test runs
//! each over its committed seeds and mutations of them in the ordinary test
//! suite (`tests/seeds.rs`).
//!
//! - [`config`]: the configuration validator and diff
//! - [`frame`]: Kafka framing of request and response streams
//! - [`review`]: the webhook's AdmissionReview handling
//! - [`rewrite`]: response rewriting, ApiVersions capping, deny answers,
//!   streamed Fetch walks and a split Fetch's refused topics
//! - [`structured`]: valid responses built from the wire layouts, rewritten

pub mod config;
pub mod frame;
pub mod review;
pub mod rewrite;
pub mod structured;

/// A target's body.
pub type Target = fn(&[u8]);

/// Every target by the name `scripts/fuzz` and `fuzz/seeds/` use.
pub const TARGETS: &[(&str, Target)] = &[
    ("config", config::run),
    ("frame", frame::run),
    ("review", review::run),
    ("rewrite", rewrite::run),
    ("structured", structured::run),
];

/// The broker ports every rewriting target advertises.
fn advertised() -> sluice_kafka::rewrite::Advertised {
    use sluice_config::model::BrokerPorts;
    use sluice_config::types::Port;
    sluice_kafka::rewrite::Advertised::new(
        "proxy.local",
        BrokerPorts {
            start: Port::new(19093).expect("a valid port"),
            count: 3,
            first_node_id: 0,
        },
    )
}
