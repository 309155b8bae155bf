//! Fetch responses (v16 and later) rewritten while their records stream.
//!
//! KIP-951 puts a Fetch response's broker endpoints (`NodeEndpoints`, tag 0)
//! in its own tagged fields, after every topic and partition, so after the
//! records, megabytes of them; and the frame's size comes first. The proxy
//! must rewrite those endpoints (a client would otherwise connect straight
//! to the broker), may not hold the records (they stream, spliced between
//! plaintext sockets), and must send the size before it has seen the
//! endpoints. The design:
//!
//! - [`Walk`] walks the response a part at a time, from the bytes buffered
//!   so far: the head, each topic's and partition's fields, each aborted
//!   transaction and tagged field are checked against the layout
//!   (`wire`) and passed on as they are; a partition's records are only
//!   counted, and passed on without being looked at; what is left at the
//!   end is the response's own tagged fields (the tail), read whole: it is
//!   small, and bounded by [`MAX_TAIL`].
//! - The size is settled before the first byte goes out: the response
//!   grows by exactly the reserve ([`Advertised::tail_reserve`]: room for a
//!   few endpoints at the longest advertised host), whatever its tail
//!   holds. [`rewrite_tail`] rewrites the endpoints and fills what the
//!   reserve leaves with one padding field (tag [`PADDING_TAG`], which no
//!   client knows, so every client skips it); endpoints that do not fit
//!   in the reserve are left out, and the client asks Metadata for those
//!   leaders, as before KIP-951.
//! - Responses up to [`HELD_UP_TO`] (one buffer's worth) are held whole and
//!   rewritten exactly instead (`rewrite`): holding them costs no more than
//!   streaming them, and they carry no padding. Which path a response takes
//!   depends on its size only, so the same response gives the same bytes on
//!   every replica.
//!
//! [`Advertised::tail_reserve`]: super::rewrite::Advertised::tail_reserve
//! [`rewrite_tail`]: super::rewrite::rewrite_tail
//! [`PADDING_TAG`]: super::rewrite::PADDING_TAG

use kafka_protocol::messages::ApiKey;

use super::rewrite::RewriteError;
use super::wire::{self, FetchPart, Schema};

/// Fetch responses up to this size (length prefix included) are held whole
/// and rewritten exactly; larger ones stream.
pub const HELD_UP_TO: usize = 64 * 1024;

/// The most bytes a streamed response's own tagged fields may take: they
/// are held whole to be rewritten.
pub const MAX_TAIL: usize = 64 * 1024;

/// The first Fetch version whose responses carry endpoints.
const FIRST_WITH_ENDPOINTS: i16 = 16;

/// Whether a large Fetch response of `version` streams with [`Walk`]: it
/// may carry endpoints, and it is a version the proxy can read.
pub fn walks(version: i16) -> bool {
    (FIRST_WITH_ENDPOINTS..=ApiKey::Fetch.valid_versions().max).contains(&version)
}

/// Whether the response of `total` bytes (length prefix included) to a
/// request of `api_key` at `version` streams with [`Walk`].
pub fn streams(api_key: i16, version: i16, total: usize) -> bool {
    api_key == ApiKey::Fetch as i16 && walks(version) && total > HELD_UP_TO
}

/// The next part of a streamed response, from [`Walk::next`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The next this many bytes are checked: pass them on as they are.
    Checked(usize),
    /// The next this many bytes are a partition's records: pass them on
    /// without looking.
    Records(usize),
    /// The rest of the frame is the response's own tagged fields: hold it
    /// whole, and rewrite it with `rewrite_tail`.
    Tail,
}

/// Where a walk is in the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    Head,
    Body,
    Topic,
    Partition,
    Aborted,
    Replica,
    Records,
    PartitionTags,
    TopicTags,
    Tail,
}

/// A Fetch response walked a part at a time, as its bytes arrive. Holds
/// counts only, never bytes.
#[derive(Debug, Clone)]
pub struct Walk {
    version: i16,
    at: At,
    topics: u32,
    partitions: u32,
    aborted: u32,
    records: usize,
}

/// Why a part could not be passed yet.
enum Stop {
    /// More bytes are needed to tell.
    More,
    /// The bytes are not a Fetch response.
    Bad(String),
}

impl Walk {
    /// A walk of a Fetch response at `version` (see [`streams`]), from the
    /// first byte of its frame (the length prefix).
    pub fn fetch(version: i16) -> Walk {
        Walk {
            version,
            at: At::Head,
            topics: 0,
            partitions: 0,
            aborted: 0,
            records: 0,
        }
    }

    /// A walk of the rest of a Fetch response at `version` whose head, up
    /// to and including its topics array's count (`topics`), was passed by
    /// the caller (a split Fetch's refused topics put in first:
    /// [`Prepended`](super::policy::Prepended)).
    pub fn fetch_topics(version: i16, topics: u32) -> Walk {
        Walk {
            at: if topics > 0 { At::Topic } else { At::Tail },
            topics,
            ..Walk::fetch(version)
        }
    }

    /// The next part, from `bytes`: what is buffered of the frame from where
    /// the last part ended (at most the rest of the frame). `Ok(None)` when
    /// more bytes are needed to tell. Consecutive checked parts come as one.
    pub fn next(&mut self, bytes: &[u8]) -> Result<Option<Part>, RewriteError> {
        let mut checked = 0;
        loop {
            match self.at {
                At::Records if checked == 0 => {
                    self.at = At::PartitionTags;
                    return Ok(Some(Part::Records(self.records)));
                }
                At::Tail if checked == 0 => return Ok(Some(Part::Tail)),
                At::Records | At::Tail => return Ok(Some(Part::Checked(checked))),
                _ => {}
            }
            let mut cur = Cursor {
                bytes: &bytes[checked..],
                at: 0,
            };
            match self.step(&mut cur) {
                Ok(()) => checked += cur.at,
                Err(Stop::More) if checked > 0 => return Ok(Some(Part::Checked(checked))),
                Err(Stop::More) => return Ok(None),
                Err(Stop::Bad(reason)) => {
                    return Err(RewriteError {
                        api: "Fetch".to_owned(),
                        version: self.version,
                        reason,
                    });
                }
            }
        }
    }

    /// Reads one part from `cur`; the walk moves on only when the part was
    /// all there.
    fn step(&mut self, cur: &mut Cursor<'_>) -> Result<(), Stop> {
        let v = self.version;
        match self.at {
            At::Head => {
                // Length prefix, correlation id, the header's tagged fields.
                cur.skip(8)?;
                cur.tagged(&wire::RESPONSE_HEADER, 1)?;
                self.at = At::Body;
            }
            At::Body => {
                // throttle_time_ms, error_code, session_id, then the topics.
                cur.skip(10)?;
                let topics = cur.array("responses")?;
                self.topics = topics;
                self.at = if topics > 0 { At::Topic } else { At::Tail };
            }
            At::Topic => {
                cur.skip(16)?;
                let partitions = cur.array("partitions")?;
                self.partitions = partitions;
                self.at = if partitions > 0 {
                    At::Partition
                } else {
                    At::TopicTags
                };
            }
            At::Partition => {
                // partition_index, error_code, high_watermark,
                // last_stable_offset, log_start_offset; the aborted
                // transactions (nullable).
                cur.skip(30)?;
                let aborted = cur.uvarint()?.saturating_sub(1);
                self.aborted = aborted;
                self.at = if aborted > 0 {
                    At::Aborted
                } else {
                    At::Replica
                };
            }
            At::Aborted => {
                cur.skip(16)?;
                cur.tagged(part(FetchPart::Aborted), v)?;
                self.aborted -= 1;
                if self.aborted == 0 {
                    self.at = At::Replica;
                }
            }
            At::Replica => {
                // preferred_read_replica, then the records' length (nullable).
                cur.skip(4)?;
                let records = cur.uvarint()?.saturating_sub(1) as usize;
                self.records = records;
                self.at = if records > 0 {
                    At::Records
                } else {
                    At::PartitionTags
                };
            }
            At::PartitionTags => {
                cur.tagged(part(FetchPart::Partition), v)?;
                self.partitions -= 1;
                if self.partitions == 0 {
                    self.at = At::TopicTags;
                } else {
                    self.at = At::Partition;
                }
            }
            At::TopicTags => {
                cur.tagged(part(FetchPart::Topic), v)?;
                self.topics -= 1;
                self.at = if self.topics > 0 { At::Topic } else { At::Tail };
            }
            At::Records | At::Tail => {}
        }
        Ok(())
    }
}

fn part(p: FetchPart) -> &'static Schema {
    wire::fetch_part(p)
}

/// A read position in the buffered bytes of a part.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn skip(&mut self, n: usize) -> Result<(), Stop> {
        if self.bytes.len() - self.at < n {
            return Err(Stop::More);
        }
        self.at += n;
        Ok(())
    }

    /// An unsigned varint as kafka-protocol reads it: at most five bytes,
    /// extra high bits dropped.
    fn uvarint(&mut self) -> Result<u32, Stop> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = u32::from(*self.bytes.get(self.at).ok_or(Stop::More)?);
            self.at += 1;
            value |= (b & 0x7f) << (i * 7);
            if b < 0x80 {
                break;
            }
        }
        Ok(value)
    }

    /// A compact array's length; null is an error, as in kafka-protocol.
    fn array(&mut self, name: &str) -> Result<u32, Stop> {
        match self.uvarint()? {
            0 => Err(Stop::Bad(format!("{name}: a null array"))),
            n => Ok(n - 1),
        }
    }

    /// The tagged fields that end a `schema` structure: found by their
    /// sizes, then walked by their layout, and the two must agree (a known
    /// tag is decoded from the bytes that follow whatever its size says, so
    /// a size that lies would make the client read the rest differently).
    fn tagged(&mut self, schema: &Schema, version: i16) -> Result<(), Stop> {
        let start = self.at;
        let count = self.uvarint()?;
        for _ in 0..count {
            self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.skip(size)?;
        }
        let fields = &self.bytes[start..self.at];
        let walked =
            wire::check_tagged(schema, version, fields).map_err(|e| Stop::Bad(e.to_string()))?;
        if walked != fields.len() {
            return Err(Stop::Bad(format!(
                "tagged fields of {} bytes by their sizes, {walked} by their contents",
                fields.len()
            )));
        }
        Ok(())
    }
}
