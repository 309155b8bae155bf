//! The first bytes of a Produce request, as far as a topic policy needs
//! them to let it stream: the client id, how many topics, and the first
//! topic's name (or id, from v13). Read without holding the request (its
//! records follow).

use bytes::Buf;
use uuid::Uuid;

use crate::frame::{AdvanceChecked, read_uvarint, skip_tagged_fields};

/// The first Produce version naming topics by id.
const BY_ID: i16 = 13;

/// What the head of a Produce request says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceHead<'a> {
    /// The header's client id ("" when null).
    pub client_id: &'a str,
    /// How many topics it writes to.
    pub topics: usize,
    /// The first topic's name; `None` when named by id (v13 on) or when
    /// there is none.
    pub first: Option<&'a str>,
    /// The first topic's id (v13 on, when there is one).
    pub first_id: Option<Uuid>,
}

/// Reads the head of a Produce request frame (prefix included) of
/// `version`; `None` until `prefix` holds all of it (or when it is not
/// readable: the request is then held and decoded whole).
pub fn produce_head(prefix: &[u8], version: i16) -> Option<ProduceHead<'_>> {
    let mut b = prefix.get(12..)?;
    let client_id = nullable(&mut b, false)?.unwrap_or("");
    let flexible = version >= 9;
    if flexible {
        skip_tagged_fields(&mut b)?;
    }
    if version >= 3 {
        nullable(&mut b, flexible)?;
    }
    let _acks = b.try_get_i16().ok()?;
    let _timeout = b.try_get_i32().ok()?;
    let topics = if flexible {
        usize::try_from(read_uvarint(&mut b)?.checked_sub(1)?).ok()?
    } else {
        usize::try_from(b.try_get_i32().ok()?).ok()?
    };
    let (first, first_id) = match (topics, version) {
        (0, _) => (None, None),
        (_, BY_ID..) => {
            let id = b.get(..16)?;
            (None, Some(Uuid::from_slice(id).ok()?))
        }
        _ => (nullable(&mut b, flexible)?, None),
    };
    Some(ProduceHead {
        client_id,
        topics,
        first,
        first_id,
    })
}

/// A (nullable) string: compact in flexible versions. `None` when not all
/// there or not UTF-8; `Some(None)` when null.
pub(super) fn nullable<'a>(b: &mut &'a [u8], compact: bool) -> Option<Option<&'a str>> {
    let len = if compact {
        match read_uvarint(b)? {
            0 => return Some(None),
            n => usize::try_from(n - 1).ok()?,
        }
    } else {
        match b.try_get_i16().ok()? {
            n if n < 0 => return Some(None),
            n => usize::try_from(n).ok()?,
        }
    };
    let text = b.get(..len)?;
    b.advance_checked(len)?;
    Some(Some(std::str::from_utf8(text).ok()?))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kafka_protocol::messages::{ApiKey, ProduceRequest, TopicName, produce_request};
    use kafka_protocol::protocol::StrBytes;

    use super::*;
    use crate::encode;

    fn produce(version: i16, names: &[&str]) -> Bytes {
        let mut r = ProduceRequest::default();
        r.acks = -1;
        if version >= 3 {
            r.transactional_id = Some(StrBytes::from_static_str("txn-1").into());
        }
        for n in names {
            let mut t = produce_request::TopicProduceData::default();
            t.name = TopicName(StrBytes::from_string((*n).to_owned()));
            let mut p = produce_request::PartitionProduceData::default();
            p.records = Some(Bytes::from(vec![7u8; 1000]));
            t.partition_data = vec![p];
            r.topic_data.push(t);
        }
        encode::request(ApiKey::Produce, version, 1, "billing-1", &r).unwrap()
    }

    #[test]
    fn the_head_is_read_from_the_first_bytes_in_every_version() {
        for version in [3, 8, 9, 12] {
            let frame = produce(version, &["orders", "audit"]);
            let head = produce_head(&frame[..80], version).unwrap();
            assert_eq!(
                head,
                ProduceHead {
                    client_id: "billing-1",
                    topics: 2,
                    first: Some("orders"),
                    first_id: None,
                },
                "v{version}"
            );
            // Cut before the first name: not yet.
            let at = frame.windows(6).position(|w| w == b"orders").unwrap();
            assert_eq!(produce_head(&frame[..at + 5], version), None, "v{version}");
        }
        let frame = produce(9, &[]);
        assert_eq!(produce_head(&frame, 9).unwrap().topics, 0);
    }

    #[test]
    fn from_v13_the_first_topic_is_read_by_its_id() {
        let mut r = ProduceRequest::default();
        r.acks = -1;
        for n in [7u128, 8] {
            let mut t = produce_request::TopicProduceData::default();
            t.topic_id = Uuid::from_u128(n);
            t.partition_data = vec![produce_request::PartitionProduceData::default()];
            r.topic_data.push(t);
        }
        let frame = encode::request(ApiKey::Produce, 13, 1, "billing-1", &r).unwrap();
        let head = produce_head(&frame, 13).unwrap();
        assert_eq!((head.topics, head.first), (2, None));
        assert_eq!(head.first_id, Some(Uuid::from_u128(7)));
        // Cut inside the id: not yet.
        let id = Uuid::from_u128(7).into_bytes();
        let at = frame.windows(16).position(|w| w == id).unwrap();
        assert_eq!(produce_head(&frame[..at + 15], 13), None);
    }
}
