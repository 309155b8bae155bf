//! The Kafka wire protocol, as far as the proxy needs it. Pure: bytes in,
//! bytes out, no sockets.
//!
//! - [`frame`]: length-prefixed frames and the request header fields routing needs
//! - [`rewrite`]: broker endpoints in responses replaced by the proxy's own
//! - [`versions`]: ApiVersions capped to what the proxy can decode
//! - `codec`: typed messages from and to bytes, each decode checked first
//! - [`deny`]: error responses the proxy makes for denied requests

mod codec;
pub mod deny;
pub mod frame;
pub mod rewrite;
pub mod versions;
pub mod wire;

use std::sync::OnceLock;

use kafka_protocol::messages::ApiKey;

/// Kafka's name for an API key (`Metadata`, `Produce`, ...), or `Unknown`.
pub fn api_name(key: i16) -> &'static str {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let max = ApiKey::iter().map(|k| k as i16).max().unwrap_or(0);
        (0..=max)
            .map(|k| match ApiKey::try_from(k) {
                Ok(api) => &*format!("{api:?}").leak(),
                Err(()) => "Unknown",
            })
            .collect()
    });
    usize::try_from(key)
        .ok()
        .and_then(|k| names.get(k))
        .copied()
        .unwrap_or("Unknown")
}
