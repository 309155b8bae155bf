//! The refused topics of a split Fetch, put first in the upstream's
//! response as it streams (its records spliced as ever), instead of the
//! response being held whole to be merged. Their entries are encoded when
//! the request is judged; when the response comes, the count of its
//! topics array is found in its first bytes ([`Prepended::find`]) and
//! replaced by the new count followed by those entries
//! ([`Prepended::bytes`]): the frame grows by the difference, which the
//! caller adds to its size prefix before the first byte goes out. A
//! response held whole anyway gets the same bytes ([`Prepended::insert`]).

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::messages::fetch_response::FetchableTopicResponse;
use kafka_protocol::protocol::Encodable;

use crate::rewrite::RewriteError;
use crate::splice::put_uvarint;
use crate::wire;

/// The first Fetch version whose body is flexible (compact arrays).
const FLEXIBLE: i16 = 12;

/// Encoded response entries of the topics a split Fetch refused.
#[derive(Debug, Clone)]
pub struct Prepended {
    version: i16,
    topics: u32,
    entries: Bytes,
}

/// Where the count of a Fetch response's topics array is in its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicsCount {
    /// Its offset in the frame (length prefix included).
    pub at: usize,
    /// Its length in bytes: 4 (an int32) before v12, a varint's 1 to 5 on.
    pub len: usize,
    /// How many topics the upstream's response has.
    pub count: u32,
}

impl Prepended {
    /// The entries `topics` of a Fetch response at `version`, encoded.
    pub(super) fn encode(topics: &[FetchableTopicResponse], version: i16) -> Result<Self, String> {
        let mut entries = BytesMut::new();
        for topic in topics {
            topic
                .encode(&mut entries, version)
                .map_err(|e| e.to_string())?;
        }
        Ok(Prepended {
            version,
            topics: u32::try_from(topics.len()).map_err(|_| "too many topics".to_owned())?,
            entries: entries.freeze(),
        })
    }

    /// How many topic entries are put in.
    pub fn topics(&self) -> u32 {
        self.topics
    }

    /// The version of the Fetch.
    pub fn version(&self) -> i16 {
        self.version
    }

    fn fail(&self, reason: impl Into<String>) -> RewriteError {
        RewriteError {
            api: "Fetch".to_owned(),
            version: self.version,
            reason: reason.into(),
        }
    }

    /// Finds the topics array's count in `head`, the first bytes of the
    /// response's frame (length prefix included, at most the frame):
    /// `Ok(None)` until they hold it.
    pub fn find(&self, head: &[u8]) -> Result<Option<TopicsCount>, RewriteError> {
        let v = self.version;
        // Length prefix, correlation id, then (v12 on) the header's tags.
        let mut at = 8;
        if head.len() < at {
            return Ok(None);
        }
        if ApiKey::Fetch.response_header_version(v) >= 1 {
            let Some(end) = tagged_end(head, at) else {
                return Ok(None);
            };
            let fields = &head[at..end];
            let walked = wire::check_tagged(&wire::RESPONSE_HEADER, 1, fields)
                .map_err(|e| self.fail(e.to_string()))?;
            if walked != fields.len() {
                return Err(self.fail("the header's tagged fields disagree with their sizes"));
            }
            at = end;
        }
        // throttle_time_ms (v1 on), error_code and session_id (v7 on).
        at += match v {
            7.. => 10,
            1.. => 4,
            _ => 0,
        };
        if v >= FLEXIBLE {
            let read = uvarint(head.get(at..).unwrap_or_default()).map_err(|e| self.fail(e))?;
            let Some((n, len)) = read else {
                return Ok(None);
            };
            let count = n
                .checked_sub(1)
                .ok_or_else(|| self.fail("responses: a null array"))?;
            return Ok(Some(TopicsCount { at, len, count }));
        }
        let Some(field) = head.get(at..at + 4) else {
            return Ok(None);
        };
        let n = i32::from_be_bytes([field[0], field[1], field[2], field[3]]);
        let count = u32::try_from(n).map_err(|_| self.fail("responses: a null array"))?;
        Ok(Some(TopicsCount { at, len: 4, count }))
    }

    /// What replaces the count `found`: the new count, then the entries.
    pub fn bytes(&self, found: &TopicsCount) -> Result<Bytes, RewriteError> {
        let count = found
            .count
            .checked_add(self.topics)
            .ok_or_else(|| self.fail("too many topics"))?;
        let mut out = BytesMut::with_capacity(5 + self.entries.len());
        if self.version >= FLEXIBLE {
            let n = count
                .checked_add(1)
                .ok_or_else(|| self.fail("too many topics"))?;
            put_uvarint(&mut out, n);
        } else {
            let n = i32::try_from(count).map_err(|_| self.fail("too many topics"))?;
            out.put_i32(n);
        }
        out.put_slice(&self.entries);
        Ok(out.freeze())
    }

    /// The response `frame` (held whole, length prefix included) with the
    /// entries put first in its topics, its size grown to match.
    pub fn insert(&self, frame: &[u8]) -> Result<Bytes, RewriteError> {
        let found = self
            .find(frame)?
            .ok_or_else(|| self.fail("the response ends before its topics"))?;
        let put = self.bytes(&found)?;
        let rest = &frame[found.at + found.len..];
        let size = found.at - 4 + put.len() + rest.len();
        let size = i32::try_from(size).map_err(|_| self.fail("a response too large"))?;
        let mut out = BytesMut::with_capacity(4 + size as usize);
        out.put_i32(size);
        out.put_slice(&frame[4..found.at]);
        out.put_slice(&put);
        out.put_slice(rest);
        Ok(out.freeze())
    }
}

/// Where the tagged fields starting at `at` of `head` end, found by their
/// sizes; `None` when `head` ends first.
fn tagged_end(head: &[u8], at: usize) -> Option<usize> {
    let mut at = at;
    let (count, n) = uvarint(head.get(at..)?).ok()??;
    at += n;
    for _ in 0..count {
        let (_tag, n) = uvarint(head.get(at..)?).ok()??;
        at += n;
        let (size, n) = uvarint(head.get(at..)?).ok()??;
        at = at.checked_add(n + usize::try_from(size).ok()?)?;
    }
    (at <= head.len()).then_some(at)
}

/// An unsigned varint of at most five bytes and its length; `Ok(None)`
/// when `bytes` ends first.
fn uvarint(bytes: &[u8]) -> Result<Option<(u32, usize)>, &'static str> {
    let mut value: u32 = 0;
    for (i, b) in bytes.iter().take(5).enumerate() {
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(Some((value, i + 1)));
        }
    }
    if bytes.len() >= 5 {
        return Err("a varint of more than five bytes");
    }
    Ok(None)
}

#[cfg(test)]
mod tests;
