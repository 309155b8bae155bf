//! Whole frames from typed messages: the one encoder of a request or a
//! response with its header and length prefix, for the proxy's own client
//! (its broker lookup, a reload's upstream check, SASL) and for the tests'
//! clients and fake brokers.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Encodable, StrBytes};

/// Why a message could not be framed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The message has no layout at that version (a field it cannot carry).
    #[error("cannot encode {api:?} v{version}: {reason}")]
    Message {
        /// The API.
        api: ApiKey,
        /// The version asked for.
        version: i16,
        /// What `kafka-protocol` said.
        reason: String,
    },
    /// The frame would be longer than a length prefix can say.
    #[error("frame of {0} bytes is too large")]
    TooLarge(usize),
}

/// The frame of request `body` (API `api` at `version`), with its header:
/// `correlation_id` and `client_id`.
pub fn request<T: Encodable>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &'static str,
    body: &T,
) -> Result<Bytes, EncodeError> {
    let mut header = RequestHeader::default();
    header.request_api_key = api as i16;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(StrBytes::from_static_str(client_id));
    whole(
        api,
        version,
        &header,
        api.request_header_version(version),
        body,
    )
}

/// The frame of response `body` (API `api` at `version`) to request
/// `correlation_id`.
pub fn response<T: Encodable>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
) -> Result<Bytes, EncodeError> {
    let mut header = ResponseHeader::default();
    header.correlation_id = correlation_id;
    whole(
        api,
        version,
        &header,
        api.response_header_version(version),
        body,
    )
}

/// `header` (at `header_version`) and `body`, behind their length.
fn whole<H: Encodable, T: Encodable>(
    api: ApiKey,
    version: i16,
    header: &H,
    header_version: i16,
    body: &T,
) -> Result<Bytes, EncodeError> {
    let mut buf = BytesMut::new();
    let message = |reason: String| EncodeError::Message {
        api,
        version,
        reason,
    };
    header
        .encode(&mut buf, header_version)
        .map_err(|e| message(e.to_string()))?;
    body.encode(&mut buf, version)
        .map_err(|e| message(e.to_string()))?;
    prefixed(&buf)
}

/// `bytes` behind their length.
pub fn prefixed(bytes: &[u8]) -> Result<Bytes, EncodeError> {
    let len = i32::try_from(bytes.len()).map_err(|_| EncodeError::TooLarge(bytes.len()))?;
    let mut frame = BytesMut::with_capacity(4 + bytes.len());
    frame.put_i32(len);
    frame.put_slice(bytes);
    Ok(frame.freeze())
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};

    use super::*;

    #[test]
    fn a_request_and_its_response_are_framed_with_their_headers() {
        let req = request(
            ApiKey::ApiVersions,
            3,
            7,
            "t",
            &ApiVersionsRequest::default(),
        )
        .unwrap();
        let len = i32::from_be_bytes(req[..4].try_into().unwrap());
        assert_eq!(usize::try_from(len).unwrap(), req.len() - 4);
        assert_eq!(&req[4..6], &(ApiKey::ApiVersions as i16).to_be_bytes());
        assert_eq!(&req[6..8], &3i16.to_be_bytes());
        assert_eq!(&req[8..12], &7i32.to_be_bytes());
        let resp = response(ApiKey::ApiVersions, 3, 7, &ApiVersionsResponse::default()).unwrap();
        assert_eq!(&resp[4..8], &7i32.to_be_bytes());
    }

    #[test]
    fn a_message_without_a_layout_at_that_version_is_an_error() {
        let r = ApiVersionsRequest::default();
        let e = request(ApiKey::ApiVersions, 99, 1, "t", &r).unwrap_err();
        assert!(matches!(e, EncodeError::Message { version: 99, .. }), "{e}");
    }
}
