//! The topics of a Fetch request, as far as a topic policy needs them to
//! let it pass unheld: the client id, and each topic's name (or id, from
//! v13). Read in place from the request's first bytes, without decoding it
//! (a Fetch request is small; nearly always all in the first read).

use bytes::Buf;
use uuid::Uuid;

use super::produce::nullable;
use crate::frame::{AdvanceChecked, read_uvarint, skip_tagged_fields};

/// The first Fetch version naming topics by id.
const BY_ID: i16 = 13;
/// The first flexible Fetch version.
const FLEXIBLE: i16 = 12;

/// A topic a Fetch request names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicRef<'a> {
    /// By name (before v13).
    Name(&'a str),
    /// By id (v13 on).
    Id(Uuid),
}

/// What the topics array of a Fetch request says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchHead<'a> {
    /// The header's client id ("" when null).
    pub client_id: &'a str,
    /// The topics it fetches, in order (the session's forgotten topics,
    /// which read nothing, are not among them).
    pub topics: Vec<TopicRef<'a>>,
}

/// Reads the topics of a Fetch request frame (prefix included) of
/// `version`; `None` until `prefix` holds all of its topics array (or when
/// it is not readable: the request is then held and decoded whole).
pub fn fetch_head(prefix: &[u8], version: i16) -> Option<FetchHead<'_>> {
    let mut b = prefix.get(12..)?;
    let client_id = nullable(&mut b, false)?.unwrap_or("");
    let flexible = version >= FLEXIBLE;
    if flexible {
        skip_tagged_fields(&mut b)?;
    }
    // replica_id (to v14), max_wait_ms, min_bytes, max_bytes,
    // isolation_level; session id and epoch from v7.
    let fixed = if version <= 14 { 17 } else { 13 } + if version >= 7 { 8 } else { 0 };
    b.advance_checked(fixed)?;
    let count = length(&mut b, flexible)?;
    // Each topic takes at least a few bytes: a count beyond what is left
    // cannot be read here (and allocates nothing).
    let mut topics = Vec::with_capacity(count.min(b.len()));
    for _ in 0..count {
        let topic = if version >= BY_ID {
            let id = b.get(..16)?;
            b.advance_checked(16)?;
            TopicRef::Id(Uuid::from_slice(id).ok()?)
        } else {
            TopicRef::Name(nullable(&mut b, flexible)?.unwrap_or(""))
        };
        topics.push(topic);
        for _ in 0..length(&mut b, flexible)? {
            b.advance_checked(partition_size(version))?;
            if flexible {
                skip_tagged_fields(&mut b)?;
            }
        }
        if flexible {
            skip_tagged_fields(&mut b)?;
        }
    }
    Some(FetchHead { client_id, topics })
}

/// The fixed fields of one partition: partition, current_leader_epoch
/// (v9), fetch_offset, last_fetched_epoch (v12), log_start_offset (v5),
/// partition_max_bytes.
fn partition_size(version: i16) -> usize {
    let mut size = 4 + 8 + 4;
    if version >= 9 {
        size += 4;
    }
    if version >= 12 {
        size += 4;
    }
    if version >= 5 {
        size += 8;
    }
    size
}

/// An array's length: compact in flexible versions; `None` when null or
/// not all there.
fn length(b: &mut &[u8], compact: bool) -> Option<usize> {
    if compact {
        return usize::try_from(read_uvarint(b)?.checked_sub(1)?).ok();
    }
    usize::try_from(b.try_get_i32().ok()?).ok()
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic as Topic};
    use kafka_protocol::messages::{ApiKey, FetchRequest, TopicName};
    use kafka_protocol::protocol::{Message, StrBytes};

    use super::*;
    use crate::encode;

    fn request(version: i16, topics: &[(&str, u128, usize)]) -> bytes::Bytes {
        let mut r = FetchRequest::default();
        r.max_wait_ms = 500;
        r.session_epoch = -1;
        for (name, id, partitions) in topics {
            let mut t = Topic::default();
            t.topic = TopicName(StrBytes::from_string((*name).to_owned()));
            t.topic_id = Uuid::from_u128(*id);
            t.partitions = (0..*partitions)
                .map(|i| FetchPartition::default().with_partition(i as i32))
                .collect();
            r.topics.push(t);
        }
        encode::request(ApiKey::Fetch, version, 7, "client-1", &r).unwrap()
    }

    #[test]
    fn every_topic_is_read_at_every_version() {
        let versions = <FetchRequest as Message>::VERSIONS;
        let asked = [("orders", 1, 3), ("", 2, 0), ("payments-eu", 3, 1)];
        for version in versions.min..=versions.max {
            let frame = request(version, &asked);
            let head = fetch_head(&frame, version).expect("all there");
            assert_eq!(head.client_id, "client-1", "v{version}");
            let want: Vec<TopicRef<'_>> = asked
                .iter()
                .map(|(name, id, _)| match version {
                    BY_ID.. => TopicRef::Id(Uuid::from_u128(*id)),
                    _ => TopicRef::Name(name),
                })
                .collect();
            assert_eq!(head.topics, want, "v{version}");
        }
    }

    #[test]
    fn a_topics_array_not_all_there_is_not_read() {
        for version in [4, 7, 12, 13, 17] {
            let frame = request(version, &[("orders", 1, 2), ("payments", 2, 2)]);
            assert_eq!(fetch_head(&frame, version).unwrap().topics.len(), 2);
            assert_eq!(fetch_head(&frame[..20], version), None, "v{version}");
            // Cut anywhere: every topic, or nothing.
            for n in 0..frame.len() {
                if let Some(head) = fetch_head(&frame[..n], version) {
                    assert_eq!(head.topics.len(), 2, "v{version} cut at {n}");
                }
            }
        }
    }

    #[test]
    fn a_huge_count_allocates_nothing_and_reads_nothing() {
        let mut frame = request(4, &[]).to_vec();
        // The topics count is the last field of an empty v4 request
        // before the (absent) forgotten topics: set it to i32::MAX.
        let at = frame.len() - 4;
        frame[at..].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(fetch_head(&frame, 4), None);
    }
}
