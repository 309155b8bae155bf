//! A tenant's Produce request (v3 to v12, topics by name) renamed while its
//! records stream: the frame's size goes out first, so it must be known
//! before the names after the first topic's records are read.
//!
//! Each topic name grows by exactly the same number of bytes: the prefix,
//! and in flexible versions (v9 on) one more, because the new compact
//! length is written one byte longer than the old one (a varint with a
//! redundant continuation byte, which every varint reader reads: Kafka's,
//! kafka-protocol's, librdkafka's). So the size is the old size and the
//! head's growth (its transactional id, read whole) and the topics' count
//! times that. Every topic name is renamed (an empty one too, into the
//! tenant's namespace); a Produce naming topics by id (v13) is not walked.

use bytes::{BufMut, Bytes, BytesMut};

/// The first Produce version that names topics by id.
const BY_ID: i16 = 13;
/// The first flexible Produce version.
const FLEXIBLE: i16 = 9;
/// The first request header version with tagged fields (Produce v9 on).
const HEADER_TAGS: i16 = 9;

/// Whether a Produce request at `version` is renamed as it streams.
pub fn streams_renamed(version: i16) -> bool {
    (3..BY_ID).contains(&version)
}

/// What to do with the next bytes of the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Pass this many bytes on as they are.
    Pass(usize),
    /// Take this many bytes out, and send these instead.
    Replace(usize, Bytes),
    /// This many bytes are a partition's records: stream them.
    Records(usize),
    /// The frame is done.
    End,
}

/// The head of a Produce request: the new frame size, and the steps that
/// pass it (header, transactional id, acks, timeout, topics' count).
#[derive(Debug)]
pub struct Head {
    /// The renamed frame's size (its length prefix).
    pub size: i32,
    /// The head's steps, in order.
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    Topic,
    Partitions,
    Partition,
    /// A partition's records, of this many bytes, come next.
    Records(usize),
    PartitionTags,
    TopicTags,
    Tail,
    Done,
}

/// A Produce request's body walked a step at a time after its head.
#[derive(Debug)]
pub struct Walk {
    prefix: String,
    flexible: bool,
    at: At,
    topics: usize,
    partitions: usize,
}

/// Reads the head of the Produce frame in `bytes` (length prefix
/// included); `Ok(None)` while it is not all there.
pub fn head(bytes: &[u8], version: i16, prefix: &str) -> Result<Option<(Head, Walk)>, String> {
    let flexible = version >= FLEXIBLE;
    let mut r = Reader { bytes, at: 4 };
    let Some(()) = r.skip(8) else { return Ok(None) };
    let Some(client_id) = r.int(2) else {
        return Ok(None);
    };
    if client_id > 0 && r.skip(client_id as usize).is_none() {
        return Ok(None);
    }
    if version >= HEADER_TAGS && r.tags().is_none() {
        return Ok(None);
    }
    let header_end = r.at;
    let Some(txn) = r.string(flexible) else {
        return Ok(None);
    };
    let txn_end = r.at;
    let Some(()) = r.skip(6) else { return Ok(None) };
    let Some(topics) = r.count(flexible) else {
        return Ok(None);
    };
    let size = i64::from(i32::from_be_bytes(
        bytes[..4].try_into().map_err(|_| "short")?,
    ));
    let mut steps = vec![Step::Pass(header_end)];
    let mut grow = 0i64;
    if let Some(txn) = txn.filter(|t| !t.is_empty()) {
        let txn = std::str::from_utf8(txn).map_err(|_| "a transactional id that is not UTF-8")?;
        let new = string(flexible, &prefixed(prefix, txn)?, None);
        grow += new.len() as i64 - (txn_end - header_end) as i64;
        steps.push(Step::Replace(txn_end - header_end, new));
    } else {
        steps.push(Step::Pass(txn_end - header_end));
    }
    steps.push(Step::Pass(r.at - txn_end));
    let per_topic = prefix.len() as i64 + i64::from(flexible);
    grow += per_topic * topics as i64;
    let size = i32::try_from(size + grow).map_err(|_| "a request too large renamed")?;
    let walk = Walk {
        prefix: prefix.to_owned(),
        flexible,
        at: if topics > 0 { At::Topic } else { At::Tail },
        topics,
        partitions: 0,
    };
    Ok(Some((Head { size, steps }, walk)))
}

impl Walk {
    /// The next step, from `bytes`: what is buffered of the frame from
    /// where the last step ended. `Ok(None)` while more bytes are needed.
    pub fn next(&mut self, bytes: &[u8]) -> Result<Option<Step>, String> {
        let mut r = Reader { bytes, at: 0 };
        let step = match self.at {
            At::Topic => {
                let Some(name) = r.string(self.flexible) else {
                    return Ok(None);
                };
                let name = name.ok_or("a null topic name")?;
                let name =
                    std::str::from_utf8(name).map_err(|_| "a topic name that is not UTF-8")?;
                let old = r.at;
                let width = self.flexible.then(|| varint_len(bytes) + 1);
                self.at = At::Partitions;
                let new = prefixed(&self.prefix, name)?;
                Step::Replace(old, string(self.flexible, &new, width))
            }
            At::Partitions => {
                let Some(n) = r.count(self.flexible) else {
                    return Ok(None);
                };
                self.partitions = n;
                self.at = if n > 0 { At::Partition } else { At::TopicTags };
                Step::Pass(r.at)
            }
            At::Partition => {
                let Some(()) = r.skip(4) else { return Ok(None) };
                let Some(len) = r.length(self.flexible, 4) else {
                    return Ok(None);
                };
                self.at = match len {
                    Some(n) if n > 0 => At::Records(n),
                    _ => At::PartitionTags,
                };
                Step::Pass(r.at)
            }
            At::Records(n) => {
                self.at = At::PartitionTags;
                Step::Records(n)
            }
            At::PartitionTags | At::TopicTags | At::Tail => {
                if self.flexible && r.tags().is_none() {
                    return Ok(None);
                }
                self.after_tags();
                Step::Pass(r.at)
            }
            At::Done => return Ok(Some(Step::End)),
        };
        Ok(Some(step))
    }

    fn after_tags(&mut self) {
        self.at = match self.at {
            At::PartitionTags => {
                self.partitions -= 1;
                if self.partitions > 0 {
                    At::Partition
                } else {
                    At::TopicTags
                }
            }
            At::TopicTags => {
                self.topics -= 1;
                if self.topics > 0 { At::Topic } else { At::Tail }
            }
            _ => At::Done,
        };
    }
}

/// A cursor over buffered bytes; `None` when they end first.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn skip(&mut self, n: usize) -> Option<()> {
        (self.at + n <= self.bytes.len()).then(|| self.at += n)
    }
    fn int(&mut self, width: usize) -> Option<i64> {
        let b = self.bytes.get(self.at..self.at + width)?;
        self.at += width;
        let v = b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x));
        let shift = 64 - 8 * width as u32;
        Some(((v << shift) as i64) >> shift)
    }
    fn uvarint(&mut self) -> Option<u32> {
        let mut value = 0u32;
        for i in 0..5 {
            let b = u32::from(*self.bytes.get(self.at)?);
            self.at += 1;
            value |= (b & 0x7f) << (i * 7);
            if b < 0x80 {
                return Some(value);
            }
        }
        Some(value)
    }
    /// A length (compact in flexible versions); `Some(None)` for null.
    fn length(&mut self, flexible: bool, width: usize) -> Option<Option<usize>> {
        if flexible {
            return Some(self.uvarint()?.checked_sub(1).map(|n| n as usize));
        }
        let n = self.int(width)?;
        Some((n >= 0).then_some(n as usize))
    }
    fn string(&mut self, flexible: bool) -> Option<Option<&'a [u8]>> {
        match self.length(flexible, 2)? {
            None => Some(None),
            Some(n) => {
                let s = self.bytes.get(self.at..self.at + n)?;
                self.at += n;
                Some(Some(s))
            }
        }
    }
    fn count(&mut self, flexible: bool) -> Option<usize> {
        Some(self.length(flexible, 4)?.unwrap_or(0))
    }
    /// Tagged fields: a count, then each tag's number, size and bytes.
    fn tags(&mut self) -> Option<()> {
        for _ in 0..self.uvarint()? {
            self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.skip(size)?;
        }
        Some(())
    }
}

/// How many bytes the varint at the start of `bytes` takes.
fn varint_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(5)
        .position(|b| b & 0x80 == 0)
        .map_or(5, |i| i + 1)
}

/// `s` as a string (compact in flexible versions), its compact length
/// written in `width` bytes when given (at least as many as it needs).
fn string(flexible: bool, s: &str, width: Option<usize>) -> Bytes {
    let mut out = BytesMut::with_capacity(s.len() + 5);
    if flexible {
        let mut v = s.len() as u32 + 1;
        let need = (1..=5).find(|&n| n == 5 || v < 1 << (7 * n)).unwrap_or(5);
        let width = width.unwrap_or(need).max(need);
        for i in 0..width {
            let more = if i + 1 < width { 0x80 } else { 0 };
            out.put_u8((v & 0x7f) as u8 | more);
            v >>= 7;
        }
    } else {
        // Checked by the caller: at most i16::MAX.
        out.put_i16(s.len() as i16);
    }
    out.put_slice(s.as_bytes());
    out.freeze()
}

/// `prefix` and `name`, if a Kafka string can hold them.
fn prefixed(prefix: &str, name: &str) -> Result<String, String> {
    let all = format!("{prefix}{name}");
    if all.len() > i16::MAX as usize {
        return Err(format!("a name of {} bytes with the prefix", all.len()));
    }
    Ok(all)
}
