//! The data plane: listeners, connections, upstream access.
//!
//! - [`buffer`]: how read buffers grow, per direction
//! - [`cluster`]: one generation of a virtual cluster at run time
//! - [`listener`]: bound sockets and their routes
//! - [`connection`]: one proxied client connection
//! - [`upstream`]: connecting to brokers; the proxy's own metadata lookup
//! - [`check`]: the upstream check a reload runs before it commits
//! - [`tls`]: rustls configurations from validated material

mod buffer;
#[allow(dead_code)] // wired into the reload once the engine moves to the typed admin API
pub(crate) mod check;
pub(crate) mod cluster;
pub(crate) mod connection;
pub(crate) mod listener;
pub(crate) mod tls;
pub(crate) mod upstream;
