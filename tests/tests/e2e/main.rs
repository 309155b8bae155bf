//! The end-to-end tests, one binary: the real `sluice-proxy`,
//! `sluice-watcher` and `sluice-webhook` binaries (built beforehand by
//! `cargo build --workspace --bins`, which `scripts/test` runs), real files,
//! real Kafka peers (tansu, librdkafka's mock cluster) and real clients.
//! Helpers come from the test kit (`sluice-testkit`) and, for Kafka, from
//! this crate's library (`sluice-tests`). One module per concept:
//!
//! - [`roundtrip`]: real clients through the proxy, exactly once
//! - [`gateway`]: filters, broker ports, node ids, limits, hostile streams
//! - [`policy`]: a topic policy as librdkafka sees it
//! - [`holes_protocol`]: a client's raw requests at the protocol's edges: versions, fetch sessions, malformed frames
//! - [`holes_cluster`]: a policy's default deny over the cluster: broker configs, groups
//! - [`holes_policy`]: a hostile client's raw requests against a topic policy
//! - [`reload`]: hot reload under load; [`reload_failures`]: reloads that
//!   must not apply
//! - [`edges`]: reload-path edges: a FIFO for a file, zero intervals
//! - [`faults`]: brokers, proxies and watchers killed mid-stream
//! - [`kip951`]: a moved leader learned from a Fetch response, through the proxy
//! - [`fleet`]: pods in network namespaces: canary, gate, halt, the
//!   client-side analysis, pods replaced and killed mid-rollout
//! - [`memory`]: the proxy's RSS under a pipelining attacker and idle
//!   consumers that caught up
//! - [`itself`]: a broker advertising the proxy's own port: refused, not looped
//! - [`splice`]: records moved socket to socket (`--splice always`) or copied (by default, for peers on this host)
//! - [`threads`]: client connections on the connection threads (`--connection-threads`), or on the main runtime with none
//! - [`quota`]: a producer over its quota held to it, another unaffected
//! - [`holes_quota`]: clients that ignore throttling held to their quota by the proxy
//! - [`filters_live`]: a policy and a quota changed together under steady traffic, in place
//! - [`process`]: startup policies, signals, `--persist`
//! - [`admin_limits`]: the admin API under hostile callers
//! - [`watcher`]: the watcher with the real proxy and real files
//! - [`webhook`]: the admission webhook over real HTTPS
//! - [`sni`]: SNI routing: every cluster and broker behind one TLS port
//! - [`sasl`]: SASL upstreams: clients' SCRAM through the proxy, the proxy's
//!   own lookup with credentials, a broker list, or neither
//! - [`roots`]: referenced files confined to the roots the operator sets
//! - [`tls`]: TLS both ways with OpenSSL peers
//! - [`identity`]: principals from client certificates, and clients without one refused
//! - [`terminated`]: SASL terminated by the proxy: SCRAM users as principals
//! - [`parity`]: `check` against the invalid corpus
//! - [`manifests`]: the Kubernetes manifests
//! - [`ops`]: the alert rules and dashboard, evaluated by a real Prometheus
//! - [`soak`]: the soak tool in its smoke size
//! - [`lock`]: a stale Cargo.lock fails the test command, saying how to refresh it
//! - [`demo`]: `scripts/demo` and `scripts/demo --fleet` leave no process behind

mod admin_limits;
mod admin_tls;
mod certs;
mod demo;
mod edges;
mod faults;
mod filters_live;
mod fleet;
mod gateway;
mod groups;
mod holes_cluster;
mod holes_policy;
mod holes_protocol;
mod holes_quota;
mod identity;
mod itself;
mod kip951;
mod lock;
mod manifests;
mod matrix;
mod memory;
mod ops;
mod own_client;
mod parity;
mod policy;
mod process;
mod quota;
mod reload;
mod reload_failures;
mod roots;
mod roundtrip;
mod sasl;
mod sni;
mod soak;
mod splice;
mod tenancy;
mod terminated;
mod threads;
mod tls;
mod watcher;
mod webhook;
