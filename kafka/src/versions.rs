//! ApiVersions capping: a client must never pick a version of an API the
//! proxy has to decode but cannot, and never use an API the proxy does not
//! know (it might carry broker addresses the proxy would not rewrite).
//!
//! The versions served are kafka-protocol's: from Kafka 4.0's baseline
//! (KIP-896 removed Fetch v0–3, Produce v0–2, ListOffsets v0, OffsetFetch
//! v0, OffsetCommit v0–1, OffsetForLeaderEpoch v0–1, CreateTopics v0–1,
//! DeleteTopics v0, DescribeConfigs v0 and a few more from the protocol)
//! to the newest
//! it knows. Outside that range the proxy cannot judge a request, so it is
//! not offered ([`cap_api_versions`]) and not served ([`served`]).

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, ResponseHeader, api_versions_response,
};

use super::codec::{decode, encode, with_header};
use super::encode;
use super::rewrite::RewriteError;

/// Kafka's UNSUPPORTED_VERSION.
pub const UNSUPPORTED_VERSION: i16 = 35;

/// What the proxy does with a request at `version` of `api_key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// A version the proxy can judge (or an API it does not know, which
    /// whatever judges unknown APIs decides).
    Yes,
    /// ApiVersions at a version the proxy cannot read: answered with
    /// UNSUPPORTED_VERSION ([`unsupported_api_versions`]), as Kafka does,
    /// so the client asks again at one it offers.
    Refused,
    /// Any other API at a version outside the range offered (`min` to
    /// `max`): Kafka has no answer for it but closing the connection, and
    /// neither has the proxy.
    Closed {
        /// The oldest version served.
        min: i16,
        /// The newest.
        max: i16,
    },
}

/// Whether a request at `version` of `api_key` is served.
pub fn served(api_key: i16, version: i16) -> Served {
    let Ok(api) = ApiKey::try_from(api_key) else {
        return Served::Yes;
    };
    let range = api.valid_versions();
    if (range.min..=range.max).contains(&version) {
        Served::Yes
    } else if api == ApiKey::ApiVersions {
        Served::Refused
    } else {
        Served::Closed {
            min: range.min,
            max: range.max,
        }
    }
}

/// The answer to an ApiVersions request the proxy cannot read: v0 (which
/// every client reads, whatever version it asked for), UNSUPPORTED_VERSION,
/// and the versions of ApiVersions it serves, as Kafka answers.
pub fn unsupported_api_versions(correlation_id: i32) -> Bytes {
    let range = ApiKey::ApiVersions.valid_versions();
    let mut own = api_versions_response::ApiVersion::default();
    own.api_key = ApiKey::ApiVersions as i16;
    own.min_version = range.min;
    own.max_version = range.max;
    let mut body = ApiVersionsResponse::default();
    body.error_code = UNSUPPORTED_VERSION;
    body.api_keys = vec![own];
    encode::response(ApiKey::ApiVersions, 0, correlation_id, &body)
        .expect("an ApiVersions v0 answer always encodes")
}

/// Rewrites an ApiVersions response frame: unknown APIs are removed, and
/// the range of every API for which `decoded(api_key)` is true is narrowed
/// to the versions this proxy can decode (an API left with none is
/// removed). Error responses (which a broker sends as v0 whatever the
/// request's version) pass unchanged.
pub fn cap_api_versions(
    frame: &Bytes,
    version: i16,
    decoded: &dyn Fn(i16) -> bool,
) -> Result<Bytes, RewriteError> {
    let fail = |reason: String| RewriteError {
        api: "ApiVersions".to_owned(),
        version,
        reason,
    };
    let header_version = ApiKey::ApiVersions.response_header_version(version);
    let mut buf = frame.slice(4..);
    let header = {
        use kafka_protocol::protocol::Decodable;
        ResponseHeader::decode(&mut buf, header_version).map_err(|e| fail(e.to_string()))?
    };
    // error_code is the first field in every version.
    if buf.get(..2).is_some_and(|code| code != [0, 0]) {
        return Ok(frame.clone());
    }
    let mut r = decode::<ApiVersionsResponse>(&mut buf, version).map_err(fail)?;
    r.api_keys.retain_mut(|k| {
        let Ok(api) = ApiKey::try_from(k.api_key) else {
            return false;
        };
        if decoded(k.api_key) {
            let range = api.valid_versions();
            k.min_version = k.min_version.max(range.min);
            k.max_version = k.max_version.min(range.max);
        }
        k.min_version <= k.max_version
    });
    let mut body = encode(&r, version).map_err(fail)?;
    body.extend_from_slice(&buf);
    with_header(&header, header_version, &body).map_err(fail)
}

#[cfg(test)]
mod tests;
