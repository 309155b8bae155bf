//! A message copied by its layout with its names changed: every string the
//! layout marks as a name ([`Ty::Name`]) is given to [`Names::name`], which
//! keeps it, replaces it, or drops the entry that carries it (an element of
//! an array whose own name is dropped goes, and the array's count with it);
//! every error message ([`Ty::Message`]) may be replaced too. Everything
//! else is copied byte for byte, so one walk serves every API and version
//! the layouts know, requests and responses alike. Lengths change with the
//! names: a string's own prefix, and the size of a tagged field that holds
//! one.

use bytes::{BufMut, BytesMut};

use super::{Malformed, Schema, Ty, Walk, malformed, within};

/// What a [`Ty::Name`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entity {
    /// A topic.
    Topic,
    /// A consumer (or share) group.
    Group,
    /// A transactional id.
    TransactionalId,
    /// A coordinator's key: a group or a transactional id, by its key type.
    Coordinator,
    /// A configs resource's name: a topic's or a group's by its resource
    /// type (the struct's `resource_type`, read before it), else neither.
    Resource,
    /// A regular expression over topic names (KIP-848's subscriptions,
    /// matched by the broker against whole names).
    TopicRegex,
}

/// What becomes of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Renamed {
    /// It stays as it is.
    Keep,
    /// It becomes this.
    To(String),
    /// The entry that carries it goes (a name the reader must not see).
    Drop,
}

/// What the caller does with each name and message.
pub trait Names {
    /// The name `name` of a `entity` (never [`Entity::Resource`]: a
    /// resource's name comes as the topic's or group's it is).
    fn name(&mut self, entity: Entity, name: &str) -> Renamed;
    /// An error message; `None` keeps it.
    fn message(&mut self, text: &str) -> Option<String>;
}

impl Schema {
    /// The types of its fields and tagged fields at `version`.
    pub(crate) fn field_types_at(&self, version: i16) -> impl Iterator<Item = &'static Ty> {
        let fields = self
            .fields
            .iter()
            .filter(move |f| within(f.versions, version));
        let tagged = self
            .tagged
            .iter()
            .filter(move |t| within(t.versions, version));
        (fields.map(|f| &f.ty)).chain(tagged.map(|t| &t.ty))
    }
}

/// Kafka's configs resource types whose names are a tenant's.
const TOPIC_RESOURCE: i64 = 2;
const GROUP_RESOURCE: i64 = 32;

/// Copies the `schema` message at `version` from the start of `bytes` into
/// `out`, its names given to `names`. Returns how many bytes it took.
pub fn rename(
    schema: &Schema,
    version: i16,
    bytes: &[u8],
    names: &mut dyn Names,
    out: &mut BytesMut,
) -> Result<usize, Malformed> {
    let mut r = Renamer {
        walk: Walk {
            bytes,
            at: 0,
            depth: 0,
            wanted: u32::MAX,
            seen: false,
            tagged_at: None,
        },
        names,
    };
    let kept = r.schema(schema, version, out).map_err(|mut e| {
        e.0.path.push(schema.name);
        e
    })?;
    if !kept {
        return Err(malformed(format!(
            "{}: its own name is refused",
            schema.name
        )));
    }
    Ok(r.walk.at)
}

struct Renamer<'a, 'n> {
    walk: Walk<'a>,
    names: &'n mut dyn Names,
}

/// What a field's walk found: whether its entry stays.
type Kept = Result<bool, Malformed>;

impl<'a> Renamer<'a, '_> {
    /// Copies the bytes from `from` to where the walk is.
    fn copy(&self, from: usize, out: &mut BytesMut) {
        out.put_slice(&self.walk.bytes[from..self.walk.at]);
    }

    fn schema(&mut self, schema: &Schema, version: i16, out: &mut BytesMut) -> Kept {
        if !within(schema.versions, version) {
            return Err(malformed(format!("version {version} is not supported")));
        }
        let flexible = version >= schema.flexible;
        let mut kept = true;
        let mut resource_type = None;
        for field in schema.fields {
            if !within(field.versions, version) {
                continue;
            }
            let from = self.walk.at;
            let entity = match &field.ty {
                Ty::Name(Entity::Resource) => match resource_type {
                    Some(TOPIC_RESOURCE) => Some(Entity::Topic),
                    Some(GROUP_RESOURCE) => Some(Entity::Group),
                    _ => None,
                },
                Ty::Name(entity) => Some(*entity),
                _ => None,
            };
            let step = match (&field.ty, entity) {
                (Ty::Name(_), Some(entity)) => self.name(entity, flexible, out),
                (Ty::Name(_), None) => self.walk.ty(&Ty::String, version, flexible).map(|()| {
                    self.copy(from, out);
                    true
                }),
                (ty, _) => self.ty(ty, version, flexible, out),
            };
            kept &= step.map_err(|mut e| {
                e.0.path.push(field.name);
                e
            })?;
            if field.name == "resource_type" {
                resource_type = Some(i64::from(self.walk.bytes[from] as i8));
            }
        }
        if flexible {
            self.tagged(schema, version, out)?;
        }
        Ok(kept)
    }

    fn tagged(
        &mut self,
        schema: &Schema,
        version: i16,
        out: &mut BytesMut,
    ) -> Result<(), Malformed> {
        let count = self.walk.uvarint()?;
        uvarint(out, count);
        for _ in 0..count {
            let tag = self.walk.uvarint()?;
            let size = self.walk.uvarint()? as usize;
            uvarint(out, tag);
            match schema.tagged.iter().find(|t| t.tag == tag) {
                Some(t) if within(t.versions, version) => {
                    let mut inner = BytesMut::new();
                    self.ty(&t.ty, version, true, &mut inner).map_err(|mut e| {
                        e.0.path.push(t.name);
                        e
                    })?;
                    uvarint(out, u32::try_from(inner.len()).map_err(|_| too_long())?);
                    out.put_slice(&inner);
                }
                Some(_) => {
                    return Err(malformed(format!(
                        "tag {tag} is not valid in version {version}"
                    )));
                }
                None => {
                    uvarint(out, size as u32);
                    out.put_slice(self.walk.take(size)?);
                }
            }
        }
        Ok(())
    }

    fn ty(&mut self, ty: &Ty, version: i16, flexible: bool, out: &mut BytesMut) -> Kept {
        let from = self.walk.at;
        match ty {
            Ty::Name(entity) => self.name(*entity, flexible, out),
            Ty::Message => self.message(flexible, out).map(|()| true),
            Ty::Array(element) => self.array(element, version, flexible, out).map(|()| true),
            Ty::Struct(schema) => self.schema(schema, version, out),
            Ty::OptionStruct(schema) => {
                let present = self.walk.take(1)?[0];
                out.put_u8(present);
                match present {
                    1 => self.schema(schema, version, out),
                    _ => Ok(true),
                }
            }
            Ty::Fixed(_) | Ty::String | Ty::Bytes => {
                self.walk.ty(ty, version, flexible)?;
                self.copy(from, out);
                Ok(true)
            }
        }
    }

    /// A string: `None` for null.
    fn string(&mut self, flexible: bool) -> Result<Option<&'a str>, Malformed> {
        let Some(n) = self.walk.length(flexible, 2)? else {
            return Ok(None);
        };
        let at = self.walk.at;
        self.walk.take(n)?;
        let all: &'a [u8] = self.walk.bytes;
        std::str::from_utf8(&all[at..at + n])
            .map(Some)
            .map_err(|_| malformed("a name that is not UTF-8".to_owned()))
    }

    fn name(&mut self, entity: Entity, flexible: bool, out: &mut BytesMut) -> Kept {
        let from = self.walk.at;
        let Some(name) = self.string(flexible)? else {
            self.copy(from, out);
            return Ok(true);
        };
        match self.names.name(entity, name) {
            Renamed::Keep => {
                self.copy(from, out);
                Ok(true)
            }
            Renamed::To(new) => {
                string(out, flexible, &new)?;
                Ok(true)
            }
            Renamed::Drop => {
                self.copy(from, out);
                Ok(false)
            }
        }
    }

    fn message(&mut self, flexible: bool, out: &mut BytesMut) -> Result<(), Malformed> {
        let from = self.walk.at;
        // A message that is not UTF-8 is copied as it came.
        let text = match self.walk.length(flexible, 2)? {
            Some(n) => std::str::from_utf8(self.walk.take(n)?).ok(),
            None => None,
        };
        match text.and_then(|t| self.names.message(t)) {
            Some(new) => string(out, flexible, &new),
            None => {
                self.copy(from, out);
                Ok(())
            }
        }
    }

    fn array(
        &mut self,
        element: &Ty,
        version: i16,
        flexible: bool,
        out: &mut BytesMut,
    ) -> Result<(), Malformed> {
        let from = self.walk.at;
        let Some(n) = self.walk.length(flexible, 4)? else {
            self.copy(from, out);
            return Ok(());
        };
        // As the check walks it: every element takes at least a byte.
        if n > self.walk.left() {
            return Err(malformed(format!(
                "an array of {n} elements, {} bytes left",
                self.walk.left()
            )));
        }
        if let Ty::Fixed(size) = element {
            self.walk.take(n.saturating_mul(*size))?;
            self.copy(from, out);
            return Ok(());
        }
        let mut elements = BytesMut::new();
        let mut kept = 0;
        for i in 0..n {
            let at = elements.len();
            let keep = self
                .ty(element, version, flexible, &mut elements)
                .map_err(|mut e| {
                    e.0.reason = format!("element {i}: {}", e.0.reason);
                    e
                })?;
            if keep {
                kept += 1;
            } else {
                elements.truncate(at);
            }
        }
        length(out, flexible, 4, kept)?;
        out.put_slice(&elements);
        Ok(())
    }
}

#[cold]
fn too_long() -> Malformed {
    malformed("a renamed field too long for its length".to_owned())
}

fn uvarint(out: &mut BytesMut, mut v: u32) {
    while v >= 0x80 {
        out.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

/// A non-null length prefix of `n`.
fn length(out: &mut BytesMut, flexible: bool, width: usize, n: usize) -> Result<(), Malformed> {
    if flexible {
        uvarint(out, u32::try_from(n + 1).map_err(|_| too_long())?);
    } else if width == 2 {
        out.put_i16(i16::try_from(n).map_err(|_| too_long())?);
    } else {
        out.put_i32(i32::try_from(n).map_err(|_| too_long())?);
    }
    Ok(())
}

fn string(out: &mut BytesMut, flexible: bool, s: &str) -> Result<(), Malformed> {
    length(out, flexible, 2, s.len())?;
    out.put_slice(s.as_bytes());
    Ok(())
}
