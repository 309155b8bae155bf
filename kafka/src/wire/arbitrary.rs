//! Random, valid messages built from their layouts: the tests check the
//! layouts against the crate with them, and the structure-aware fuzz target
//! feeds them to the rewriters (built with `--cfg fuzzing`).

use kafka_protocol::messages::ApiKey;

use super::{Schema, Ty, schemas};

/// Where the choices come from: a seeded generator in tests, the fuzzer's
/// bytes in fuzzing.
pub trait Entropy {
    /// The next 64 random bits.
    fn next(&mut self) -> u64;

    /// A number below `n` (which is not 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// xorshift64*: deterministic entropy for tests, so a failure names its
/// seed.
#[derive(Debug, Clone, Copy)]
pub struct Seeded(pub u64);

impl Entropy for Seeded {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A valid `api` response body at `version`, or `None` when the proxy has no
/// layout for it.
pub fn response(api: ApiKey, version: i16, entropy: &mut dyn Entropy) -> Option<Vec<u8>> {
    at_version(schemas::response(api)?, version, entropy)
}

/// A valid `api` request body at `version`, or `None` when the proxy has no
/// layout for it.
pub fn request(api: ApiKey, version: i16, entropy: &mut dyn Entropy) -> Option<Vec<u8>> {
    at_version(schemas::request(api)?, version, entropy)
}

/// A valid `schema` message at `version`, if the layout has that version.
fn at_version(schema: &Schema, version: i16, entropy: &mut dyn Entropy) -> Option<Vec<u8>> {
    if version < schema.versions.0 || version > schema.versions.1 {
        return None;
    }
    let mut out = Vec::new();
    message(schema, version, entropy, &mut out);
    Some(out)
}

fn uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn length(out: &mut Vec<u8>, flexible: bool, width: usize, n: usize) {
    if flexible {
        uvarint(out, n as u32 + 1);
    } else {
        out.extend_from_slice(&(n as u32).to_be_bytes()[4 - width..]);
    }
}

/// Appends a valid encoding of `ty`. `full` asks for a value that differs
/// from the crate's default (a tagged field equal to its default is not
/// written back).
fn value(
    ty: &Ty,
    version: i16,
    flexible: bool,
    e: &mut dyn Entropy,
    full: bool,
    out: &mut Vec<u8>,
) {
    match ty {
        // One byte may be a boolean, which the crate writes back as 0 or 1.
        Ty::Fixed(1) => out.push(1 - u8::from(!full && e.below(2) == 0)),
        Ty::Fixed(n) => out.extend((0..*n).map(|_| e.next() as u8)),
        Ty::String | Ty::Name(_) | Ty::Message | Ty::Bytes => {
            let n = e.below(4) as usize;
            let width = if matches!(ty, Ty::Bytes) { 4 } else { 2 };
            length(out, flexible, width, n);
            out.extend((0..n).map(|_| b'a' + e.below(26) as u8));
        }
        Ty::Array(element) => {
            let n = e.below(3) as usize + usize::from(full);
            length(out, flexible, 4, n);
            for _ in 0..n {
                value(element, version, flexible, e, false, out);
            }
        }
        Ty::Struct(schema) => message(schema, version, e, out),
        Ty::OptionStruct(schema) => {
            if full || e.below(2) == 0 {
                out.push(1);
                message(schema, version, e, out);
            } else {
                out.push(0xff);
            }
        }
    }
}

/// Appends a valid `schema` message at `version`.
pub(super) fn message(schema: &Schema, version: i16, e: &mut dyn Entropy, out: &mut Vec<u8>) {
    let flexible = version >= schema.flexible;
    for f in schema.fields {
        if f.versions.0 <= version && version <= f.versions.1 {
            value(&f.ty, version, flexible, e, false, out);
        }
    }
    if !flexible {
        return;
    }
    let mut fields = Vec::new();
    for t in schema.tagged {
        if t.versions.0 <= version && version <= t.versions.1 && e.below(2) == 0 {
            let mut content = Vec::new();
            value(&t.ty, version, true, e, true, &mut content);
            fields.push((t.tag, content));
        }
    }
    // A tag the crate does not know, kept as bytes.
    if e.below(3) == 0 {
        fields.push((200, vec![7; e.below(4) as usize]));
    }
    uvarint(out, fields.len() as u32);
    for (tag, content) in fields {
        uvarint(out, tag);
        uvarint(out, content.len() as u32);
        out.extend_from_slice(&content);
    }
}
