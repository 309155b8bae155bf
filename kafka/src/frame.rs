//! Kafka framing: a 4-byte big-endian length, then the message. Frames are
//! checked, then split off a buffer; an incomplete frame is `Ok(None)`, not an
//! error. Request headers are read only as far as routing needs, and every
//! decision here can be made on a frame's first bytes, so the rest of it
//! can stream through without being held.

use bytes::Buf;

/// Why a connection's byte stream is not a usable Kafka stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The length prefix is over the configured limit.
    #[error("frame of {size} bytes is over the limit of {limit} bytes")]
    TooLarge {
        /// Announced size.
        size: u64,
        /// `limits.maxFrameBytes`.
        limit: u32,
    },
    /// The length prefix is negative or too small to hold a header.
    #[error("frame length {0} is invalid")]
    BadLength(i32),
    /// A header field could not be read.
    #[error("malformed {0} header")]
    BadHeader(&'static str),
    /// A request the proxy answers itself could not be decoded.
    #[error("malformed {api} v{version} request: {reason}")]
    BadRequest {
        /// The API's name.
        api: String,
        /// Its version.
        version: i16,
        /// What failed.
        reason: String,
    },
}

/// Smallest request: api key, version and correlation id.
const MIN_REQUEST: i32 = 8;
/// Smallest response: a correlation id.
const MIN_RESPONSE: i32 = 4;

/// Length of the first complete request frame in `buf`, prefix included.
pub fn request_frame_len(buf: &[u8], limit: u32) -> Result<Option<usize>, FrameError> {
    frame_len(buf, limit, MIN_REQUEST)
}

/// Length of the first complete response frame in `buf`, prefix included.
pub fn response_frame_len(buf: &[u8], limit: u32) -> Result<Option<usize>, FrameError> {
    frame_len(buf, limit, MIN_RESPONSE)
}

/// Length a request frame declares, prefix included, once its 4-byte
/// prefix is in `buf` (the rest need not be).
pub fn request_frame_size(buf: &[u8], limit: u32) -> Result<Option<usize>, FrameError> {
    frame_size(buf, limit, MIN_REQUEST)
}

/// Length a response frame declares, prefix included, once its 4-byte
/// prefix is in `buf`.
pub fn response_frame_size(buf: &[u8], limit: u32) -> Result<Option<usize>, FrameError> {
    frame_size(buf, limit, MIN_RESPONSE)
}

/// Bytes of a request frame that hold everything routing reads: the
/// length prefix, api key, version and correlation id.
pub const REQUEST_HEAD: usize = 12;
/// Bytes of a response frame that hold its prefix and correlation id.
pub const RESPONSE_HEAD: usize = 8;

fn frame_len(buf: &[u8], limit: u32, min: i32) -> Result<Option<usize>, FrameError> {
    Ok(frame_size(buf, limit, min)?.filter(|total| buf.len() >= *total))
}

fn frame_size(buf: &[u8], limit: u32, min: i32) -> Result<Option<usize>, FrameError> {
    let Some(prefix) = buf.get(..4) else {
        return Ok(None);
    };
    let size = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    if size < min {
        return Err(FrameError::BadLength(size));
    }
    if size as u64 > u64::from(limit) {
        return Err(FrameError::TooLarge {
            size: size as u64,
            limit,
        });
    }
    Ok(Some(4 + size as usize))
}

/// The fields of a request header the proxy routes on; at the same offsets in
/// every header version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// Which API.
    pub api_key: i16,
    /// Which version of it.
    pub api_version: i16,
    /// Echoed in the response.
    pub correlation_id: i32,
}

/// Reads the header of a request frame (prefix included).
pub fn request_header(frame: &[u8]) -> Result<RequestHeader, FrameError> {
    let mut b = frame.get(4..12).ok_or(FrameError::BadHeader("request"))?;
    Ok(RequestHeader {
        api_key: b.get_i16(),
        api_version: b.get_i16(),
        correlation_id: b.get_i32(),
    })
}

/// The correlation id of a response frame (prefix included).
pub fn response_correlation_id(frame: &[u8]) -> Result<i32, FrameError> {
    let mut b = frame.get(4..8).ok_or(FrameError::BadHeader("response"))?;
    Ok(b.get_i32())
}

/// Produce's API key.
const PRODUCE: i16 = 0;

/// True when a request gets no response: Produce with `acks=0`. Everything
/// else is answered, so it takes a slot in the connection's in-flight queue.
pub fn expects_response(frame: &[u8], header: &RequestHeader) -> bool {
    header.api_key != PRODUCE || produce_acks(frame, header.api_version) != Some(0)
}

/// [`expects_response`] from the first bytes of a request frame of `total`
/// bytes: `None` while `prefix` is too short to tell (a Produce request's
/// `acks` comes after its client id and transactional id).
pub fn expects_response_from(prefix: &[u8], total: usize, header: &RequestHeader) -> Option<bool> {
    if header.api_key != PRODUCE {
        return Some(true);
    }
    match produce_acks(prefix, header.api_version) {
        Some(acks) => Some(acks != 0),
        None if prefix.len() < total => None,
        // Unreadable: answered, like any request the broker will refuse.
        None => Some(true),
    }
}

/// The header's client id of a request frame whose first bytes are
/// `prefix`: `None` while they do not hold all of it, `Some(None)` for a
/// null client id. Bytes that are not UTF-8 are replaced (the id only
/// names the client in quotas and metrics).
pub fn request_client_id(prefix: &[u8]) -> Option<Option<std::borrow::Cow<'_, str>>> {
    let mut b = prefix.get(12..)?;
    let len = b.try_get_i16().ok()?;
    let Ok(len) = usize::try_from(len) else {
        return Some(None);
    };
    let id = b.get(..len)?;
    Some(Some(String::from_utf8_lossy(id)))
}

/// Reads `acks` from a Produce request, skipping the header's client id (and,
/// from v9, its tagged fields) and, from v3, the transactional id.
fn produce_acks(frame: &[u8], version: i16) -> Option<i16> {
    let mut b = frame.get(12..)?;
    let client_id = b.try_get_i16().ok()?;
    if client_id > 0 {
        b.advance_checked(client_id as usize)?;
    }
    let flexible = version >= 9;
    if flexible {
        skip_tagged_fields(&mut b)?;
    }
    if version >= 3 {
        let len = if flexible {
            // Compact nullable string: length + 1, 0 = null.
            read_uvarint(&mut b)?.checked_sub(1)
        } else {
            u64::try_from(b.try_get_i16().ok()?).ok()
        };
        if let Some(len) = len {
            b.advance_checked(usize::try_from(len).ok()?)?;
        }
    }
    b.try_get_i16().ok()
}

pub(crate) fn skip_tagged_fields(b: &mut &[u8]) -> Option<()> {
    let count = read_uvarint(b)?;
    for _ in 0..count {
        let _tag = read_uvarint(b)?;
        let size = read_uvarint(b)?;
        b.advance_checked(usize::try_from(size).ok()?)?;
    }
    Some(())
}

pub(crate) fn read_uvarint(b: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..35).step_by(7) {
        let byte = b.try_get_u8().ok()?;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

pub(crate) trait AdvanceChecked {
    fn advance_checked(&mut self, n: usize) -> Option<()>;
}

impl AdvanceChecked for &[u8] {
    fn advance_checked(&mut self, n: usize) -> Option<()> {
        *self = self.get(n..)?;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn client_ids_are_read_once_whole() {
        let frame = |id: &[u8]| {
            let mut f = vec![0, 0, 0, 9, 0, 0, 0, 9, 0, 0, 0, 1];
            f.extend_from_slice(id);
            f
        };
        let whole = frame(&[0, 3, b'a', b'p', b'p', 0xff]);
        assert_eq!(
            super::request_client_id(&whole).unwrap().as_deref(),
            Some("app")
        );
        assert_eq!(super::request_client_id(&whole[..16]), None);
        assert_eq!(super::request_client_id(&whole[..12]), None);
        let null = frame(&[0xff, 0xff]);
        assert_eq!(super::request_client_id(&null), Some(None));
        let lossy = frame(&[0, 1, 0xff]);
        assert_eq!(
            super::request_client_id(&lossy).unwrap().as_deref(),
            Some("\u{fffd}")
        );
    }

    use bytes::BytesMut;
    use kafka_protocol::messages::{ProduceRequest, RequestHeader as KRequestHeader};
    use kafka_protocol::protocol::{Encodable, StrBytes};

    use super::*;

    fn produce_frame(version: i16, acks: i16, transactional_id: Option<&'static str>) -> Vec<u8> {
        let header_version =
            kafka_protocol::messages::ApiKey::Produce.request_header_version(version);
        let mut header = KRequestHeader::default();
        header.request_api_key = 0;
        header.request_api_version = version;
        header.correlation_id = 7;
        header.client_id = Some(StrBytes::from_static_str("client-1"));
        let mut req = ProduceRequest::default();
        req.acks = acks;
        req.timeout_ms = 1000;
        if version >= 3 {
            req.transactional_id = transactional_id.map(|t| StrBytes::from_static_str(t).into());
        }
        let mut body = BytesMut::new();
        header.encode(&mut body, header_version).unwrap();
        req.encode(&mut body, version).unwrap();
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        frame
    }

    #[test]
    fn incomplete_frames_are_none_and_bad_lengths_are_errors() {
        assert_eq!(request_frame_len(&[0, 0], 100), Ok(None));
        assert_eq!(request_frame_len(&[0, 0, 0, 8, 1, 2], 100), Ok(None));
        assert_eq!(
            request_frame_len(&[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 9], 100),
            Ok(Some(12))
        );
        assert_eq!(
            request_frame_len(&[0xff, 0xff, 0xff, 0xff], 100),
            Err(FrameError::BadLength(-1))
        );
        assert_eq!(
            request_frame_len(&[0, 0, 0, 3], 100),
            Err(FrameError::BadLength(3))
        );
        assert_eq!(
            request_frame_len(&[0x7f, 0xff, 0xff, 0xff], 1024),
            Err(FrameError::TooLarge {
                size: 2_147_483_647,
                limit: 1024
            })
        );
        assert_eq!(
            response_frame_len(&[0, 0, 0, 4, 0, 0, 0, 1], 100),
            Ok(Some(8))
        );
    }

    #[test]
    fn a_frame_size_is_known_from_its_prefix() {
        assert_eq!(request_frame_size(&[0, 0], 100), Ok(None));
        assert_eq!(request_frame_size(&[0, 0, 0, 50, 1], 100), Ok(Some(54)));
        assert_eq!(response_frame_size(&[0, 0, 0, 4], 100), Ok(Some(8)));
        assert_eq!(
            request_frame_size(&[0, 0, 0, 200], 100),
            Err(FrameError::TooLarge {
                size: 200,
                limit: 100
            })
        );
        assert_eq!(
            response_frame_size(&[0, 0, 0, 3], 100),
            Err(FrameError::BadLength(3))
        );
    }

    #[test]
    fn produce_acks_are_read_from_the_first_bytes_when_they_hold_them() {
        for (acks, expects) in [(0, false), (1, true)] {
            let frame = produce_frame(9, acks, Some("txn-1"));
            let h = request_header(&frame).unwrap();
            let total = frame.len();
            let needed = (REQUEST_HEAD..=total)
                .find(|n| expects_response_from(&frame[..*n], total, &h).is_some())
                .unwrap();
            assert!(needed < total, "acks sit before the topic data");
            assert_eq!(
                expects_response_from(&frame[..needed], total, &h),
                Some(expects)
            );
            assert_eq!(expects_response_from(&frame[..needed - 1], total, &h), None);
        }
        let metadata = [0, 0, 0, 8, 0, 3, 0, 1, 0, 0, 0, 7];
        let h = request_header(&metadata).unwrap();
        assert_eq!(expects_response_from(&metadata, 100, &h), Some(true));
    }

    #[test]
    fn request_headers_are_read_at_fixed_offsets() {
        let frame = produce_frame(9, 1, None);
        let h = request_header(&frame).unwrap();
        assert_eq!(
            h,
            RequestHeader {
                api_key: 0,
                api_version: 9,
                correlation_id: 7
            }
        );
        assert_eq!(
            request_header(&frame[..10]),
            Err(FrameError::BadHeader("request"))
        );
    }

    #[test]
    fn produce_with_acks_zero_expects_no_response_in_every_version() {
        let range = kafka_protocol::messages::ApiKey::Produce.valid_versions();
        for version in range.min..=range.max {
            for (acks, expects) in [(0, false), (1, true), (-1, true)] {
                for txn in [None, Some("txn-1")] {
                    let frame = produce_frame(version, acks, txn);
                    let h = request_header(&frame).unwrap();
                    assert_eq!(
                        expects_response(&frame, &h),
                        expects,
                        "v{version} acks={acks} txn={txn:?}"
                    );
                }
            }
        }
    }
}
