//! The Kafka codec's integration tests, one binary, through the crate's
//! public API only.
//!
//! - `protocol`: ApiVersions capping and the proxy's own error responses
//! - `rewrite`: address rewriting per API and version, against golden frames

mod protocol;
mod rewrite;
