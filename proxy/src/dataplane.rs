//! The data plane: listeners, connections, upstream access.
//!
//! - [`buffer`]: how read buffers grow, per direction
//! - [`cluster`]: one generation of a virtual cluster at run time
//! - [`listener`]: bound sockets and their routes
//! - [`connection`]: one proxied client connection
//! - [`upstream`]: connecting to brokers; the proxy's own metadata lookup
//! - [`tls`]: rustls configurations from validated material

mod buffer;
pub mod cluster;
pub mod connection;
pub mod listener;
pub mod tls;
pub mod upstream;
