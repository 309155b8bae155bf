//! Responses rewritten without copying what they carry. A Produce or Fetch
//! response (KIP-951) keeps its broker endpoints in its own tagged fields,
//! after everything else: the records of a Fetch response, megabytes, come
//! before them and never change. So only the tagged fields are decoded,
//! rewritten and encoded again; the frame goes out as three pieces: the new
//! length prefix, the unchanged bytes shared with the frame read from the
//! upstream, and the new tagged fields. The tagged fields are written as
//! kafka-protocol would write the decoded message (endpoints first, then the
//! other tags in order, the last of a repeated tag winning), so a canonical
//! response comes out byte for byte as a full decode and encode gives it.

use std::collections::BTreeMap;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::wire::Layout;

/// Below this many shared bytes, the pieces are joined into one frame: a
/// copy that small costs less than the extra write.
const SHARE_FROM: usize = 64 * 1024;

/// A response frame (length prefix included), as one or more pieces
/// written one after the other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    parts: Vec<Bytes>,
}

impl Frame {
    /// A frame in one piece.
    pub fn whole(bytes: Bytes) -> Frame {
        Frame { parts: vec![bytes] }
    }

    /// Its pieces, in order.
    pub fn parts(&self) -> &[Bytes] {
        &self.parts
    }

    /// Its length, all pieces together.
    pub fn len(&self) -> usize {
        self.parts.iter().map(Bytes::len).sum()
    }

    /// Whether it has no bytes (never, for a frame the proxy made).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frame in one piece: the piece itself when there is one, else a
    /// copy.
    pub fn to_bytes(&self) -> Bytes {
        match self.parts.as_slice() {
            [one] => one.clone(),
            parts => {
                let mut all = BytesMut::with_capacity(self.len());
                for p in parts {
                    all.put_slice(p);
                }
                all.freeze()
            }
        }
    }

    /// Whether a piece lies in `other`'s memory (it then keeps that memory,
    /// and whatever pays for it, alive).
    pub fn shares(&self, other: &Bytes) -> bool {
        let range = other.as_ptr_range();
        self.parts
            .iter()
            .any(|p| !p.is_empty() && range.contains(&p.as_ptr()))
    }
}

/// Rewrites the endpoints (tag 0) among the top-level tagged fields of the
/// response in `frame`, whose body starts at `body_at` and is laid out as
/// `layout` says; `rewrite` changes them in place. `None` when there are
/// none: nothing to rewrite, the frame passes as it came.
pub(super) fn endpoints<E: Decodable + Encodable>(
    frame: &Bytes,
    body_at: usize,
    layout: Layout,
    version: i16,
    rewrite: impl FnOnce(&mut Vec<E>),
) -> Result<Option<Frame>, String> {
    let tagged_at = body_at + layout.tagged_at.ok_or("the version has no tagged fields")?;
    let end = body_at + layout.size;
    let mut tagged = frame.slice(tagged_at..end);
    let mut found: Option<Vec<E>> = None;
    let mut others: BTreeMap<u32, Bytes> = BTreeMap::new();
    for _ in 0..uvarint(&mut tagged)? {
        let tag = uvarint(&mut tagged)?;
        let size = uvarint(&mut tagged)? as usize;
        if tag == 0 {
            // Decoded from the bytes that follow, whatever the size says,
            // as kafka-protocol does (and the layout walk checked).
            found = Some(array(&mut tagged, version)?);
        } else {
            if size > tagged.len() {
                return Err(format!("tag {tag} of {size} bytes, {} left", tagged.len()));
            }
            others.insert(tag, tagged.split_to(size));
        }
    }
    let mut list = found.unwrap_or_default();
    if list.is_empty() {
        return Ok(None);
    }
    rewrite(&mut list);

    let mut tail = BytesMut::new();
    put_uvarint(
        &mut tail,
        count(others.len() + usize::from(!list.is_empty()))?,
    );
    put_endpoints(&mut tail, &list, version)?;
    for (tag, value) in &others {
        put_tag(&mut tail, *tag, value)?;
    }
    // The bytes left after the message pass as they came.
    tail.put_slice(&frame[end..]);

    let shared = frame.slice(4..tagged_at);
    let length = i32::try_from(shared.len() + tail.len()).map_err(|_| "response too large")?;
    if shared.len() < SHARE_FROM {
        let mut whole = BytesMut::with_capacity(4 + shared.len() + tail.len());
        whole.put_i32(length);
        whole.put_slice(&shared);
        whole.put_slice(&tail);
        return Ok(Some(Frame::whole(whole.freeze())));
    }
    Ok(Some(Frame {
        parts: vec![
            Bytes::copy_from_slice(&length.to_be_bytes()),
            shared,
            tail.freeze(),
        ],
    }))
}

/// Writes `list` as the endpoints' tagged field (tag 0), when not empty.
pub(crate) fn put_endpoints<E: Encodable>(
    buf: &mut BytesMut,
    list: &[E],
    version: i16,
) -> Result<(), String> {
    if list.is_empty() {
        return Ok(());
    }
    let size = list
        .iter()
        .try_fold(uvarint_size(count(list.len() + 1)?), |n, e| {
            e.compute_size(version)
                .map(|s| n + s)
                .map_err(|e| e.to_string())
        })?;
    put_uvarint(buf, 0);
    put_uvarint(buf, count(size)?);
    put_uvarint(buf, count(list.len() + 1)?);
    for e in list {
        e.encode(buf, version).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Writes one tagged field as it came.
pub(crate) fn put_tag(buf: &mut BytesMut, tag: u32, value: &[u8]) -> Result<(), String> {
    put_uvarint(buf, tag);
    put_uvarint(buf, count(value.len())?);
    buf.put_slice(value);
    Ok(())
}

/// A compact array of `E`; null is an error, as in kafka-protocol.
pub(crate) fn array<E: Decodable>(buf: &mut Bytes, version: i16) -> Result<Vec<E>, String> {
    let n = match uvarint(buf)? {
        0 => return Err("a null array of endpoints".to_owned()),
        n => n as usize - 1,
    };
    if n > buf.len() {
        return Err(format!(
            "an array of {n} elements, {} bytes left",
            buf.len()
        ));
    }
    (0..n)
        .map(|_| E::decode(buf, version).map_err(|e| e.to_string()))
        .collect()
}

/// An unsigned varint as kafka-protocol reads it: at most five bytes,
/// extra high bits dropped.
pub(crate) fn uvarint(buf: &mut Bytes) -> Result<u32, String> {
    let mut value: u32 = 0;
    for i in 0..5 {
        if !buf.has_remaining() {
            return Err("a varint runs past the end".to_owned());
        }
        let b = u32::from(buf.get_u8());
        value |= (b & 0x7f) << (i * 7);
        if b < 0x80 {
            break;
        }
    }
    Ok(value)
}

pub(crate) fn put_uvarint(buf: &mut BytesMut, mut value: u32) {
    while value >= 0x80 {
        buf.put_u8((value as u8) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

pub(crate) fn uvarint_size(value: u32) -> usize {
    match value {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0xfff_ffff => 4,
        _ => 5,
    }
}

pub(crate) fn count(n: usize) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("{n} is too large to encode"))
}
