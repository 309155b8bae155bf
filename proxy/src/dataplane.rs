//! The data plane: listeners, connections, upstream access.
//!
//! - [`cluster`]: one generation of a virtual cluster at run time
//! - [`listener`]: bound sockets and their routes
//! - [`connection`]: one proxied client connection; its two directions,
//!   [`requests`] and [`responses`]
//! - [`buffer`]: how a direction holds bytes (a chunk while busy, none idle)
//! - [`block`]: frames held whole, in memory that goes back to the OS
//! - [`pool`]: a few freed frame regions kept warm for the next frames
//! - [`upstream`]: connecting to brokers; the proxy's own metadata lookup
//! - [`sasl`]: the proxy's own SASL authentication (PLAIN, SCRAM) upstream
//! - [`scram`]: the SCRAM client exchange (RFC 5802), pure
//! - [`check`]: the upstream check a reload runs before it commits
//! - [`sni`]: the shared SNI port: server names to generations
//! - [`tls`]: rustls configurations from validated material

mod block;
mod buffer;
pub(crate) mod check;
pub(crate) mod cluster;
pub(crate) mod connection;
mod inflight;
pub(crate) mod listener;
mod patience;
mod pool;
mod requests;
mod responses;
pub(crate) mod sasl;
pub(crate) mod scram;
pub(crate) mod sni;
mod splice;
pub(crate) mod tls;
pub(crate) mod upstream;

#[cfg(test)]
mod tests;
