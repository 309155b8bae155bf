//! The data plane: listeners, connections, upstream access.
//!
//! - [`buffer`]: how read buffers grow, per direction
//! - [`cluster`]: one generation of a virtual cluster at run time
//! - [`listener`]: bound sockets and their routes
//! - [`connection`]: one proxied client connection
//! - [`upstream`]: connecting to brokers; the proxy's own metadata lookup
//! - [`tls`]: rustls configurations from validated material

mod buffer;
pub(crate) mod cluster;
pub(crate) mod connection;
pub(crate) mod listener;
pub(crate) mod tls;
pub(crate) mod upstream;
