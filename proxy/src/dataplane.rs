//! The data plane: listeners, connections, upstream access.
//!
//! - [`cluster`]: one generation of a virtual cluster at run time
//! - [`listener`]: bound sockets and their routes
//! - [`routes`]: where a listener's connections go (a port's one route, or
//!   the SNI table of server names)
//! - [`cores`]: the connection threads, a current-thread runtime each
//! - [`connection`]: one proxied client connection; its two directions,
//!   [`requests`] and [`responses`]
//! - [`fetch`]: Fetch v16+ responses, records streamed, endpoints rewritten
//! - [`direction`]: what the connection and its directions share (the
//!   error, the frame clock, the in-flight slot, the chunk size)
//! - [`buffer`]: how a direction holds bytes (a chunk while busy, none idle)
//! - [`block`]: frames held whole, in memory that goes back to the OS
//! - [`pool`]: a few freed frame regions kept warm for the next frames
//! - [`stream`]: a byte stream to a peer, plain TCP or TLS
//! - [`upstream`]: connecting to brokers; the proxy's own metadata lookup
//! - [`client`]: the proxy's own small Kafka client (one request, one answer)
//! - [`sasl`]: the proxy's own SASL authentication (PLAIN, SCRAM) upstream
//! - [`scram`]: the SCRAM client exchange (RFC 5802), pure
//! - [`check`]: the upstream check a reload runs before it commits
//! - [`sni`]: the shared SNI port: server names to generations
//! - [`tls`]: rustls configurations from validated material
//! - [`throttle`]: the quota filter on a connection: bytes counted, the
//!   throttle time in Produce responses, the request side muted (KIP-219)

mod block;
mod buffer;
pub(crate) mod check;
pub(crate) mod client;
mod closed;
pub(crate) mod cluster;
pub(crate) mod connection;
pub(crate) mod cores;
mod direction;
mod fetch;
mod held;
mod identity;
mod inflight;
mod inspect;
mod latch;
pub(crate) mod listener;
pub(crate) mod live;
mod lookup;
mod merged;
mod metered;
mod oauth;
mod own;
mod patience;
mod pool;
mod refused;
mod requests;
mod responses;
mod routes;
pub(crate) mod sasl;
pub(crate) mod scram;
pub(crate) mod scram_server;
pub(crate) mod sni;
pub(crate) mod splice;
mod split;
pub(crate) mod stream;
mod tenant;
mod terminate;
mod throttle;
pub(crate) mod tls;
pub(crate) mod upstream;

#[cfg(test)]
mod tests;
