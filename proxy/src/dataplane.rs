//! The data plane: listeners, connections, upstream access.
//!
//! - [`cluster`]: one generation of a virtual cluster at run time
//! - [`listener`]: bound sockets and their routes
//! - [`connection`]: one proxied client connection
//! - [`upstream`]: connecting to brokers; the proxy's own metadata lookup
//! - [`tls`]: rustls configurations from validated material

pub mod cluster;
pub mod connection;
pub mod listener;
pub mod tls;
pub mod upstream;
