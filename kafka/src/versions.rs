//! ApiVersions capping: a client must never pick a version of an API the
//! proxy has to decode but cannot, and never use an API the proxy does not
//! know (it might carry broker addresses the proxy would not rewrite).

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, ResponseHeader};

use super::codec::{decode, encode, with_header};
use super::rewrite::RewriteError;

/// Rewrites an ApiVersions response frame: unknown APIs are removed, and the
/// highest version of every API for which `decoded(api_key)` is true is
/// lowered to the highest this proxy can decode. Error responses (which a
/// broker sends as v0 whatever the request's version) pass unchanged.
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
            k.max_version = k.max_version.min(api.valid_versions().max);
        }
        k.min_version <= k.max_version
    });
    let mut body = encode(&r, version).map_err(fail)?;
    body.extend_from_slice(&buf);
    with_header(&header, header_version, &body).map_err(fail)
}
