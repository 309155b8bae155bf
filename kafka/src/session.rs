//! Fetch sessions (KIP-227), as far as a topic policy needs them. From
//! Fetch v7 a consumer may open a session with a full Fetch (epoch 0) and
//! then send incremental ones (epoch > 0) naming only the partitions that
//! changed, while the broker answers for every partition of the session. A
//! policy judges the topics a request names, so a session's partitions
//! were judged by the policy of the Fetch that added them: after a policy
//! change the proxy answers the next incremental Fetch with
//! [`INVALID_FETCH_SESSION_EPOCH`] ([`session_reset`]) and the client
//! fetches in full again, every topic named and judged.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{ApiKey, FetchResponse};

use crate::encode;
use crate::frame::{AdvanceChecked, FrameError, RequestHeader, skip_tagged_fields};
use crate::throttle::fetch_throttle_at;

mod book;
pub use book::SessionBook;

/// Kafka's INVALID_FETCH_SESSION_EPOCH. Clients take it as "start the
/// session again": the Java client and kafka-python close the session and
/// send a full Fetch (same session id, epoch 0), logging it at INFO, with
/// no error for the application (`FetchSessionHandler.handleResponse`).
/// Chosen over FETCH_SESSION_ID_NOT_FOUND (70), after which they open a new
/// session and leave the old one in the broker's session cache until it is
/// evicted: 71 lets the broker free it at once.
pub const INVALID_FETCH_SESSION_EPOCH: i16 = 71;

/// The session fields of a Fetch request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchSession {
    /// The session's id; 0: none.
    pub id: i32,
    /// Its epoch: 0 opens (or reopens) a session, -1 fetches without one
    /// (or closes it), above 0 continues it.
    pub epoch: i32,
}

impl FetchSession {
    /// What a Fetch before v7 is: a full Fetch without a session.
    pub const NONE: FetchSession = FetchSession { id: 0, epoch: -1 };

    /// Whether the Fetch is incremental: it names only the partitions that
    /// changed, and is answered for every partition of the session.
    pub fn incremental(self) -> bool {
        self.epoch > 0
    }
}

/// Reads the session fields from the first bytes of a Fetch request frame
/// (prefix included) of `version`; `None` until `prefix` holds them (or
/// when they cannot be read). [`FetchSession::NONE`] before v7.
pub fn fetch_session(prefix: &[u8], version: i16) -> Option<FetchSession> {
    if version < 7 {
        return Some(FetchSession::NONE);
    }
    // Size, api key, version, correlation id; then the client id.
    let mut b = prefix.get(12..)?;
    let client_id = b.try_get_i16().ok()?;
    if let Ok(len) = usize::try_from(client_id) {
        b.advance_checked(len)?;
    }
    if version >= 12 {
        skip_tagged_fields(&mut b)?;
    }
    // replica_id (until v14), max_wait_ms, min_bytes, max_bytes,
    // isolation_level.
    let replica_id = if version <= 14 { 4 } else { 0 };
    b.advance_checked(replica_id + 4 + 4 + 4 + 1)?;
    let id = b.try_get_i32().ok()?;
    let epoch = b.try_get_i32().ok()?;
    Some(FetchSession { id, epoch })
}

/// The session id of a Fetch response of `version` (v7 on) read from its
/// first bytes `head` (length prefix included): `None` before v7, or
/// until `head` holds it. 0 when the broker kept no session.
pub fn fetch_response_session(head: &[u8], version: i16) -> Option<i32> {
    if version < 7 {
        return None;
    }
    // throttle_time_ms, error_code, session_id.
    let at = fetch_throttle_at(head, version)? + 4 + 2;
    let id = head.get(at..at + 4)?;
    Some(i32::from_be_bytes([id[0], id[1], id[2], id[3]]))
}

/// The proxy's answer to an incremental Fetch of `header` (v7 or later)
/// whose session must start again: INVALID_FETCH_SESSION_EPOCH, no
/// session, no partitions, as a broker answers a session it cannot
/// continue.
pub fn session_reset(header: &RequestHeader) -> Result<Bytes, FrameError> {
    let mut body = FetchResponse::default();
    body.error_code = INVALID_FETCH_SESSION_EPOCH;
    body.session_id = 0;
    let version = header.api_version;
    encode::response(ApiKey::Fetch, version, header.correlation_id, &body).map_err(|e| {
        FrameError::BadRequest {
            api: "Fetch".to_owned(),
            version,
            reason: e.to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::{FetchRequest, ResponseHeader, TopicName, fetch_request};
    use kafka_protocol::protocol::{Decodable, StrBytes};

    use super::*;
    use crate::frame::request_header;

    fn fetch(version: i16, client: &'static str, id: i32, epoch: i32) -> Bytes {
        let mut r = FetchRequest::default();
        r.max_wait_ms = 500;
        r.session_id = id;
        r.session_epoch = epoch;
        if version >= 13 {
            r.topics = vec![fetch_request::FetchTopic::default()];
        } else {
            let mut t = fetch_request::FetchTopic::default();
            t.topic = TopicName(StrBytes::from_static_str("orders"));
            r.topics = vec![t];
        }
        encode::request(ApiKey::Fetch, version, 3, client, &r).unwrap()
    }

    #[test]
    fn the_session_is_read_from_the_first_bytes_in_every_version() {
        for version in 7..=18 {
            for (id, epoch) in [(0, 0), (0, -1), (77, 0), (77, 5), (-9, i32::MAX)] {
                let frame = fetch(version, "billing-1", id, epoch);
                let got = fetch_session(&frame, version);
                assert_eq!(got, Some(FetchSession { id, epoch }), "v{version}");
            }
            // Read once all of it is there, and not before.
            let frame = fetch(version, "billing-1", 77, 5);
            let whole = (0..=frame.len())
                .find(|n| fetch_session(&frame[..*n], version).is_some())
                .unwrap();
            // Header, client id, its tags (v12 on), replica id (until
            // v14), the fixed fields, the session's two.
            let replica = if version <= 14 { 4 } else { 0 };
            let expected = 12 + 2 + 9 + usize::from(version >= 12) + replica + 13 + 8;
            assert_eq!(whole, expected, "v{version}");
            let got = fetch_session(&frame[..whole], version);
            assert_eq!(got, Some(FetchSession { id: 77, epoch: 5 }), "v{version}");
        }
        let old = fetch(6, "billing-1", 0, -1);
        assert_eq!(fetch_session(&old, 6), Some(FetchSession::NONE));
        assert!(!FetchSession::NONE.incremental());
        assert!(FetchSession { id: 77, epoch: 1 }.incremental());
        assert!(!FetchSession { id: 77, epoch: 0 }.incremental());
    }

    #[test]
    fn the_session_id_is_read_from_a_responses_first_bytes() {
        for version in 7..=18 {
            let mut r = FetchResponse::default();
            r.session_id = 0x0102_0304;
            let frame = encode::response(ApiKey::Fetch, version, 3, &r).unwrap();
            let whole = (0..=frame.len())
                .find(|n| fetch_response_session(&frame[..*n], version).is_some())
                .unwrap();
            // Size, correlation id, its tags (v12 on), throttle, error, id.
            assert_eq!(
                whole,
                8 + usize::from(version >= 12) + 4 + 2 + 4,
                "v{version}"
            );
            let got = fetch_response_session(&frame, version);
            assert_eq!(got, Some(0x0102_0304), "v{version}");
        }
        let frame = encode::response(ApiKey::Fetch, 6, 3, &FetchResponse::default()).unwrap();
        assert_eq!(fetch_response_session(&frame, 6), None);
    }

    #[test]
    fn a_reset_is_a_fetch_response_with_the_session_error_and_nothing_else() {
        for version in 7..=18 {
            let frame = fetch(version, "c", 77, 5);
            let header = request_header(&frame).unwrap();
            let answer = session_reset(&header).unwrap();
            let mut body = answer.slice(4..);
            let h =
                ResponseHeader::decode(&mut body, ApiKey::Fetch.response_header_version(version))
                    .unwrap();
            assert_eq!(h.correlation_id, 3);
            let r = FetchResponse::decode(&mut body, version).unwrap();
            assert_eq!(r.error_code, INVALID_FETCH_SESSION_EPOCH, "v{version}");
            assert_eq!(r.session_id, 0);
            assert!(r.responses.is_empty());
            assert!(body.is_empty(), "v{version}: nothing after the body");
        }
    }
}
