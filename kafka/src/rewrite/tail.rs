//! The own tagged fields of a streamed Fetch response (see `streamed`),
//! rewritten to exactly the size announced before the records went out:
//! the original size plus the reserve.

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::NodeEndpoint;

use super::mapper::Mapper;
use super::{Advertised, Learned, MAX_TRAILING_BYTES, NODE_ENDPOINTS_TAG, RewriteError};
use crate::splice::{array, count, put_endpoints, put_tag, put_uvarint, uvarint, uvarint_size};
use crate::wire::{self, FetchPart};

/// The tag of the field that fills what the reserve leaves: no Kafka
/// version defines it, so every client skips it. Its size is always
/// written in three bytes (a varint with leading zero groups, which every
/// Kafka decoder reads), so that any room of [`PAD_MIN`] bytes or more can
/// be filled exactly.
pub const PADDING_TAG: u32 = 16_383;

/// The smallest padding field: its tag (two bytes) and its size (three).
const PAD_MIN: usize = 5;

/// Endpoints the reserve has room for at the longest advertised host.
/// Those of a few new leaders: more come only when many partitions moved
/// at once, and the ones left out are asked of Metadata.
const RESERVED_ENDPOINTS: usize = 3;

/// Varints that may grow by a byte: the field count, the endpoints' size.
const SLACK: usize = 3;

impl Advertised {
    /// How many bytes a streamed Fetch response grows by, whatever its tail
    /// holds: room for [`RESERVED_ENDPOINTS`] endpoints each as long as the
    /// longest host the proxy advertises (an upstream host takes at least
    /// its length byte), and for the padding field.
    pub fn tail_reserve(&self) -> usize {
        let host = self.longest_host();
        // Its compact length takes at most one byte more than an empty one.
        PAD_MIN + SLACK + RESERVED_ENDPOINTS * (host + uvarint_size(host as u32 + 1))
    }
}

/// A streamed response's tail, rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewrittenTail {
    /// The new tagged fields: exactly the old ones' size plus the reserve.
    pub bytes: Bytes,
    /// Upstream addresses announced in the endpoints.
    pub learned: Vec<Learned>,
    /// Node ids the proxy does not serve, dropped.
    pub unmapped: Vec<i32>,
    /// Node ids left out because the reserve had no room for them (the
    /// client asks Metadata for those instead).
    pub crowded: Vec<i32>,
    /// Whether endpoints were there to rewrite.
    pub changed: bool,
}

/// Rewrites the own tagged fields (`tail`: them, and at most
/// [`MAX_TRAILING_BYTES`] after them, passed on as they came) of a streamed
/// Fetch response at `version` into `tail.len() + reserve` bytes: the
/// endpoints rewritten to `to`, the other fields as they came, and padding
/// (see [`PADDING_TAG`]).
pub fn rewrite_tail(
    tail: &Bytes,
    version: i16,
    to: &Advertised,
    reserve: usize,
) -> Result<RewrittenTail, RewriteError> {
    let fail = |reason: String| RewriteError {
        api: "Fetch".to_owned(),
        version,
        reason,
    };
    let walked = wire::check_tagged(wire::fetch_part(FetchPart::Response), version, tail)
        .map_err(|e| fail(e.to_string()))?;
    // What a held response may have after its message, this one may too,
    // passed on after the fields (the one rule of `decode`).
    let trailing = tail.len() - walked;
    if trailing > MAX_TRAILING_BYTES {
        return Err(fail(format!(
            "{trailing} bytes after the response's tagged fields"
        )));
    }
    let (after, tail) = (tail.slice(walked..), tail.slice(..walked));
    let (mut list, others) = fields(&tail, version).map_err(fail)?;
    let changed = !list.is_empty();
    let mut m = Mapper {
        to,
        learn: true,
        learned: Vec::new(),
        unmapped: Vec::new(),
        errors: Vec::new(),
        topic_ids: Vec::new(),
    };
    list.retain_mut(|e| m.endpoint(e.node_id.0, &mut e.host, &mut e.port));
    let target = tail.len() + reserve;
    let mut crowded = Vec::new();
    let bytes = loop {
        let unpadded = encode(&list, &others, version, None).map_err(fail)?.len();
        if unpadded + PAD_MIN <= target {
            let fill = Some(target - unpadded - PAD_MIN);
            let mut fields = encode(&list, &others, version, fill).map_err(fail)?;
            fields.put_slice(&after);
            break fields.freeze();
        }
        match list.pop() {
            Some(e) => crowded.push(e.node_id.0),
            None => {
                return Err(fail(format!(
                    "its tagged fields do not fit in {target} bytes"
                )));
            }
        }
    };
    crowded.reverse();
    Ok(RewrittenTail {
        bytes,
        learned: m.learned,
        unmapped: m.unmapped,
        crowded,
        changed,
    })
}

/// The endpoints (tag 0) and the other fields, by tag (the last of a
/// repeated tag wins, as in kafka-protocol).
fn fields(tail: &Bytes, version: i16) -> Result<(Vec<NodeEndpoint>, BTreeMap<u32, Bytes>), String> {
    let mut buf = tail.clone();
    let mut list = Vec::new();
    let mut others = BTreeMap::new();
    for _ in 0..uvarint(&mut buf)? {
        let tag = uvarint(&mut buf)?;
        let size = uvarint(&mut buf)? as usize;
        if tag == NODE_ENDPOINTS_TAG {
            list = array(&mut buf, version)?;
            continue;
        }
        if size > buf.len() {
            return Err(format!("tag {tag} of {size} bytes, {} left", buf.len()));
        }
        let value = buf.split_to(size);
        // An upstream's padding (another Sluice in front of the broker)
        // holds nothing: dropped, its room is this proxy's to fill.
        if tag != PADDING_TAG {
            others.insert(tag, value);
        }
    }
    Ok((list, others))
}

/// The fields, counted with their padding, and that padding (`fill` bytes
/// of zeros, when given) in its place among the tags: they go in order.
fn encode(
    list: &[NodeEndpoint],
    others: &BTreeMap<u32, Bytes>,
    version: i16,
    fill: Option<usize>,
) -> Result<BytesMut, String> {
    let mut out = BytesMut::new();
    put_uvarint(
        &mut out,
        count(others.len() + usize::from(!list.is_empty()) + 1)?,
    );
    put_endpoints(&mut out, list, version)?;
    for (tag, value) in others.range(..PADDING_TAG) {
        put_tag(&mut out, *tag, value)?;
    }
    if let Some(fill) = fill {
        let f = u32::try_from(fill)
            .ok()
            .filter(|&f| f < 1 << 21)
            .ok_or_else(|| format!("{fill} bytes of padding"))?;
        put_uvarint(&mut out, PADDING_TAG);
        out.put_slice(&[
            (f & 0x7f) as u8 | 0x80,
            ((f >> 7) & 0x7f) as u8 | 0x80,
            (f >> 14) as u8,
        ]);
        out.put_bytes(0, fill);
    }
    for (tag, value) in others.range(PADDING_TAG..) {
        put_tag(&mut out, *tag, value)?;
    }
    Ok(out)
}
