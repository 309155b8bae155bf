//! The proxy crate's integration tests, one binary (one link of the
//! dependency graph). They drive the library's public API and the real
//! `sluice-proxy` binary; the end-to-end tests with Kafka peers are in
//! `tests/e2e`.
//!
//! - `admin_api`: the admin router in-process: callers, errors, corpus parity
//! - `admin_guard`: the gate of the mutating endpoints: tokens, Origin, Host, audit
//! - `admin_socket`: the admin server on a real socket: early 401, body deadline, connection cap
//! - `cli`: `sluice-proxy check` and `diff`, run as the real binary
//!
//! The Kafka codec's own tests (ApiVersions capping, error responses,
//! address rewriting) are in `sluice-kafka`'s `tests/codec`.

mod admin_api;
mod admin_guard;
mod admin_socket;
mod cli;
