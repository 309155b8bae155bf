//! Checks a message against its wire layout before kafka-protocol decodes it.
//!
//! kafka-protocol 0.18 reserves memory for the length an array declares
//! before it reads a single element: ten bytes that declare 1.4 billion
//! brokers make it ask for about 150 GB, and a failed allocation aborts the
//! process. The proxy decodes requests from clients (`deny-apis`) and
//! responses from brokers, so a declared length has to be backed by bytes
//! before the crate sees it.
//!
//! [`check`] walks a message by its layout ([`schemas`], generated from the
//! crate's own decoders by `scripts/gen-wire-schemas`) and walks every element
//! of every array, so when the walk succeeds, what the crate allocates is what
//! the message really holds, and the walk costs one pass over the bytes
//! without allocating. The walk is strict wherever the crate would reserve
//! memory, and lenient where leniency cannot cost any (a null where the
//! layout allows none, text that is not UTF-8): the crate rejects those
//! itself, with an error rather than an abort.

#[rustfmt::skip]
mod schemas;

#[cfg(any(test, feature = "arbitrary"))]
pub mod arbitrary;

mod fetch;
mod rename;
#[cfg(test)]
mod tests;

pub use rename::{Entity, Names, Renamed, rename};

pub(crate) use fetch::{FetchPart, check_tagged, fetch_part};

use std::fmt;

use kafka_protocol::protocol::Decodable;

/// The highest version; "from version N on" is `(N, MAX)`.
pub(crate) const MAX: i16 = i16::MAX;

/// How a field is encoded.
#[derive(Debug)]
pub(crate) enum Ty {
    /// A fixed number of bytes: integers, booleans, UUIDs, floats.
    Fixed(usize),
    /// A string; compact (unsigned varint length + 1) in flexible versions.
    String,
    /// A string naming what a tenant's prefix applies to (`rename`).
    Name(Entity),
    /// A string that is an error message (a name in it is a tenant's too).
    Message,
    /// Bytes; compact in flexible versions.
    Bytes,
    /// An array; compact in flexible versions.
    Array(&'static Ty),
    /// A nested structure, at the same version.
    Struct(&'static Schema),
    /// A nested structure behind a presence byte (1: present).
    OptionStruct(&'static Schema),
}

/// A field and the versions that have it.
#[derive(Debug)]
pub(crate) struct Field {
    name: &'static str,
    versions: (i16, i16),
    ty: Ty,
}

/// A tagged field the crate decodes (others are skipped by their size).
#[derive(Debug)]
pub(crate) struct Tagged {
    tag: u32,
    name: &'static str,
    versions: (i16, i16),
    ty: Ty,
}

/// The layout of one message or nested structure.
#[derive(Debug)]
pub struct Schema {
    name: &'static str,
    versions: (i16, i16),
    /// The first flexible version (compact encodings, tagged fields).
    flexible: i16,
    fields: &'static [Field],
    tagged: &'static [Tagged],
}

pub(crate) const fn field(name: &'static str, from: i16, to: i16, ty: Ty) -> Field {
    Field {
        name,
        versions: (from, to),
        ty,
    }
}

pub(crate) const fn tagged(tag: u32, name: &'static str, from: i16, to: i16, ty: Ty) -> Tagged {
    Tagged {
        tag,
        name,
        versions: (from, to),
        ty,
    }
}

/// The response header: a correlation id, and tagged fields from version 1.
/// Checked before a response the proxy re-encodes, because its tagged
/// fields are re-encoded too.
pub(crate) const RESPONSE_HEADER: Schema = Schema {
    name: "ResponseHeader",
    versions: (0, 1),
    flexible: 1,
    fields: &[field("correlation_id", 0, MAX, Ty::Fixed(4))],
    tagged: &[],
};

/// A message type whose layout is known.
pub trait Checked: Decodable {
    /// Its layout.
    const SCHEMA: &'static Schema;
}

/// Why a message does not match its layout: where, and what. Boxed, so
/// that every step of a walk returns a pointer-sized result.
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed(Box<Detail>);

#[derive(Debug, PartialEq, Eq)]
struct Detail {
    path: Vec<&'static str>,
    reason: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for part in self.0.path.iter().rev() {
            if !first {
                f.write_str(".")?;
            }
            f.write_str(part)?;
            first = false;
        }
        write!(f, ": {}", self.0.reason)
    }
}

/// The layouts of `api`'s response and request, where the proxy has them.
pub fn response_schema(api: kafka_protocol::messages::ApiKey) -> Option<&'static Schema> {
    schemas::response(api)
}

/// The layout of `api`'s request, where the proxy has one.
pub fn request_schema(api: kafka_protocol::messages::ApiKey) -> Option<&'static Schema> {
    schemas::request(api)
}

/// Walks `bytes` as a `schema` message at `version`; returns how many bytes
/// the message takes.
pub fn check(schema: &Schema, version: i16, bytes: &[u8]) -> Result<usize, Malformed> {
    check_for_tag(schema, version, bytes, u32::MAX).map(|l| l.size)
}

/// Where a message's parts lie, from [`check_for_tag`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The message's size.
    pub(crate) size: usize,
    /// Where its own (top-level) tagged fields begin, in a flexible version.
    pub(crate) tagged_at: Option<usize>,
    /// Whether those include the tag looked for.
    pub(crate) present: bool,
}

/// [`check`], also telling where the message's own (top-level) tagged
/// fields begin and whether they include `tag`: whether a KIP-951 response
/// carries node endpoints, and where, without decoding it.
pub(crate) fn check_for_tag(
    schema: &Schema,
    version: i16,
    bytes: &[u8],
    tag: u32,
) -> Result<Layout, Malformed> {
    let mut walk = Walk {
        bytes,
        at: 0,
        depth: 0,
        wanted: tag,
        seen: false,
        tagged_at: None,
    };
    walk.schema(schema, version).map_err(|mut e| {
        e.0.path.push(schema.name);
        e
    })?;
    Ok(Layout {
        size: walk.at,
        tagged_at: walk.tagged_at,
        present: walk.seen,
    })
}

/// A position in the bytes of one message.
struct Walk<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Structures entered: 1 in the message's own fields.
    depth: usize,
    /// The top-level tag looked for, and whether it was seen.
    wanted: u32,
    seen: bool,
    /// Where the top-level tagged fields begin.
    tagged_at: Option<usize>,
}

type Step = Result<(), Malformed>;

#[cold]
fn malformed(reason: String) -> Malformed {
    Malformed(Box::new(Detail {
        path: Vec::new(),
        reason,
    }))
}

fn within(versions: (i16, i16), version: i16) -> bool {
    versions.0 <= version && version <= versions.1
}

impl Walk<'_> {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&[u8], Malformed> {
        if n > self.left() {
            return Err(self.short(n));
        }
        let taken = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(taken)
    }

    #[cold]
    fn short(&self, n: usize) -> Malformed {
        malformed(format!("{n} bytes needed, {} left", self.left()))
    }

    /// A big-endian signed integer `width` bytes wide (at most 8).
    fn int(&mut self, width: usize) -> Result<i64, Malformed> {
        let bytes = self.take(width)?;
        let unsigned = bytes.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b));
        let shift = 64 - 8 * width as u32;
        Ok(((unsigned << shift) as i64) >> shift)
    }

    /// An unsigned varint, read as kafka-protocol reads it: at most five
    /// bytes, extra high bits dropped.
    fn uvarint(&mut self) -> Result<u32, Malformed> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = u32::from(self.take(1)?[0]);
            value |= (b & 0x7f) << (i * 7);
            if b < 0x80 {
                break;
            }
        }
        Ok(value)
    }

    /// A length prefix: `None` for null.
    fn length(&mut self, compact: bool, width: usize) -> Result<Option<usize>, Malformed> {
        if compact {
            return Ok(match self.uvarint()? {
                0 => None,
                n => Some(n as usize - 1),
            });
        }
        match self.int(width)? {
            -1 => Ok(None),
            n if n < 0 => Err(malformed(format!("negative length {n}"))),
            n => Ok(Some(n as usize)),
        }
    }

    fn schema(&mut self, schema: &Schema, version: i16) -> Step {
        if !within(schema.versions, version) {
            return Err(malformed(format!("version {version} is not supported")));
        }
        let flexible = version >= schema.flexible;
        self.depth += 1;
        for field in schema.fields {
            if within(field.versions, version) {
                self.ty(&field.ty, version, flexible).map_err(|mut e| {
                    e.0.path.push(field.name);
                    e
                })?;
            }
        }
        if flexible {
            if self.depth == 1 {
                self.tagged_at = Some(self.at);
            }
            self.tagged(schema, version)?;
        }
        self.depth -= 1;
        Ok(())
    }

    fn tagged(&mut self, schema: &Schema, version: i16) -> Step {
        let count = self.uvarint()?;
        for _ in 0..count {
            let tag = self.uvarint()?;
            // The crate keeps unknown tags under an `i32` and writes back only
            // those it reads as non-negative, while counting them all: a larger
            // tag would come out of the proxy as a malformed response.
            if tag > i32::MAX as u32 {
                return Err(malformed(format!("tag {tag} is out of range")));
            }
            let size = self.uvarint()? as usize;
            if self.depth == 1 && tag == self.wanted {
                self.seen = true;
            }
            match schema.tagged.iter().find(|t| t.tag == tag) {
                // The crate decodes a known tag from the bytes that follow,
                // whatever its size says.
                Some(t) if within(t.versions, version) => {
                    self.ty(&t.ty, version, true).map_err(|mut e| {
                        e.0.path.push(t.name);
                        e
                    })?;
                }
                Some(_) => {
                    return Err(malformed(format!(
                        "tag {tag} is not valid in version {version}"
                    )));
                }
                None => {
                    self.take(size)?;
                }
            }
        }
        Ok(())
    }

    fn ty(&mut self, ty: &Ty, version: i16, flexible: bool) -> Step {
        match ty {
            Ty::Fixed(n) => self.take(*n).map(drop),
            Ty::String | Ty::Name(_) | Ty::Message => {
                if let Some(n) = self.length(flexible, 2)? {
                    self.take(n)?;
                }
                Ok(())
            }
            Ty::Bytes => {
                if let Some(n) = self.length(flexible, 4)? {
                    self.take(n)?;
                }
                Ok(())
            }
            Ty::Array(element) => self.array(element, version, flexible),
            Ty::Struct(schema) => self.schema(schema, version),
            Ty::OptionStruct(schema) => match self.take(1)?[0] {
                1 => self.schema(schema, version),
                _ => Ok(()),
            },
        }
    }

    fn array(&mut self, element: &Ty, version: i16, flexible: bool) -> Step {
        let Some(n) = self.length(flexible, 4)? else {
            return Ok(());
        };
        // Every element takes at least one byte: this bound is what keeps the
        // crate's `Vec::with_capacity(n)` to the size of the message.
        if n > self.left() {
            return Err(malformed(format!(
                "an array of {n} elements, {} bytes left",
                self.left()
            )));
        }
        if let Ty::Fixed(size) = element {
            let bytes = n.saturating_mul(*size);
            return self.take(bytes).map(drop);
        }
        for i in 0..n {
            self.ty(element, version, flexible).map_err(|mut e| {
                e.0.reason = format!("element {i}: {}", e.0.reason);
                e
            })?;
        }
        Ok(())
    }
}
