//! `sluice-kafka`: the Kafka wire protocol, as far as the proxy needs it.
//! Pure: bytes in, bytes out; no runtime, no sockets, no files (the proxy's
//! data plane does the I/O and calls in here). The fuzz targets link this
//! crate alone.
//!
//! - [`encode`]: whole request and response frames from typed messages
//! - [`frame`]: length-prefixed frames and the request header fields routing needs
//! - [`rewrite`]: broker endpoints in responses replaced by the proxy's own
//! - `splice`: Produce and Fetch responses rewritten without copying their records
//! - [`streamed`]: Fetch v16+ responses walked as they stream, their records never held
//! - [`versions`]: ApiVersions capped to what the proxy can decode
//! - `codec`: typed messages from and to bytes, each decode checked first
//! - [`deny`]: error responses the proxy makes for denied requests
//! - [`cluster`]: the answers refusing cluster operations a topic policy denies
//! - [`policy`]: a topic policy applied per topic: forward, answer, or split and merge
//! - [`resources`]: groups and transactional ids named by requests, and their refusals
//! - [`session`]: Fetch sessions (KIP-227): read from a request's first bytes, reset
//! - [`tenancy`]: a tenant's prefix on every name it sends, off every name it gets
//! - [`throttle`]: `throttle_time_ms` set in responses the proxy throttles

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cluster;
mod codec;
pub use codec::{MAX_TRAILING_BYTES, decode};
pub mod deny;
pub mod encode;
pub mod frame;
pub mod policy;
pub mod resources;
pub mod rewrite;
pub mod session;
mod splice;
pub mod streamed;
pub mod tenancy;
pub mod throttle;
pub mod versions;
pub mod wire;

/// Kafka's name for an API key (`Metadata`, `Produce`, ...), or `Unknown`.
pub fn api_name(key: i16) -> &'static str {
    sluice_config::apis::name(key)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kafka_protocol::messages::ApiKey;
    use sluice_config::apis::{self, Handling};

    /// A request frame of `api` at `version` with `body`: correlation id 7,
    /// client id `c`.
    pub(crate) fn framed(api: ApiKey, version: i16, body: &[u8]) -> Bytes {
        let mut frame = vec![0; 4];
        frame.extend_from_slice(&(api as i16).to_be_bytes());
        frame.extend_from_slice(&version.to_be_bytes());
        frame.extend_from_slice(&7i32.to_be_bytes());
        frame.extend_from_slice(&[0, 1, b'c']);
        if api.request_header_version(version) >= 2 {
            frame.push(0);
        }
        frame.extend_from_slice(body);
        let len = u32::try_from(frame.len() - 4).unwrap();
        frame[..4].copy_from_slice(&len.to_be_bytes());
        Bytes::from(frame)
    }

    /// Asserts `docs/policies.md` holds `table`, a table the code renders.
    pub(crate) fn policies_doc_holds(table: &str) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/policies.md");
        let doc = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            doc.contains(table),
            "docs/policies.md must hold this table, as the code has it:\n{table}"
        );
    }

    #[test]
    fn the_api_table_is_kafka_protocols_list() {
        let crate_list: Vec<(i16, String)> = ApiKey::iter()
            .map(|k| (k as i16, format!("{k:?}")))
            .collect();
        let table: Vec<(i16, String)> = apis::KAFKA_APIS
            .iter()
            .map(|a| (a.key, a.name.to_owned()))
            .collect();
        assert_eq!(
            table, crate_list,
            "sluice-config's apis table must list kafka-protocol's APIs"
        );
    }

    #[test]
    fn only_api_versions_is_capped() {
        let capped: Vec<_> = apis::KAFKA_APIS
            .iter()
            .filter(|a| a.handling == Handling::Capped)
            .map(|a| a.key)
            .collect();
        assert_eq!(capped, [ApiKey::ApiVersions as i16]);
    }
}
