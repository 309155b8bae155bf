//! What the end-to-end tests (and the soak and benchmark tools) need beyond
//! the test kit (`sluice-testkit`): real Kafka peers, real Kafka clients, a
//! raw Kafka client, the kernel's socket table and the Kubernetes
//! manifests. It depends on kafka-protocol, so no crate other than the
//! end-to-end binary and `tools/` takes it.
//!
//! - [`peers`]: the tansu broker and librdkafka's mock cluster
//! - [`sasl`]: a tansu that requires SCRAM-SHA-512 (SQLite storage)
//! - [`config`]: proxy configurations in front of tansu
//! - [`python`]: the Python Kafka clients in `tests/clients`
//! - [`hosts`]: a hosts file of the test's own, for the clients it starts
//! - [`kafka`]: a minimal synchronous Kafka client for raw-protocol tests
//! - [`sockets`]: the kernel's view of who is connected to whom
//! - [`relay`]: a TCP relay that counts the connections made through it
//! - [`audit`]: the proxy's data-plane audit lines
//! - [`manifests`]: the Kubernetes manifests, rendered and parsed
//! - [`fleet`]: pods in network namespaces (the rollout tests and bench)
//! - [`prometheus`]: a real Prometheus, `promtool`, the shipped rules and dashboard
//! - [`promql`]: metric names in PromQL expressions and in `/metrics` texts
//!
//! The end-to-end tests themselves are one binary, `tests/e2e`, with a
//! module per concept.

pub mod audit;
pub mod config;
pub mod fleet;
pub mod hosts;
pub mod kafka;
pub mod manifests;
pub mod peers;
pub mod prometheus;
pub mod promql;
pub mod python;
pub mod relay;
pub mod sasl;
pub mod sockets;
