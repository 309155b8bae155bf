//! The Kafka wire protocol, as far as the proxy needs it. Pure: bytes in,
//! bytes out, no sockets.
//!
//! - [`frame`]: length-prefixed frames and the request header fields routing needs
//! - [`rewrite`]: broker endpoints in responses replaced by the proxy's own
//! - [`versions`]: ApiVersions capped to what the proxy can decode
//! - [`deny`]: error responses the proxy makes for denied requests

pub mod deny;
pub mod frame;
pub mod rewrite;
pub mod versions;
