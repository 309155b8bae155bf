//! A tenant's namespace on a shared cluster: its prefix put before every
//! topic, group and transactional id a request names, and taken off every
//! name a response gives back. A response's entry whose name is not the
//! tenant's (another tenant's topic in a listing) is dropped; a name that
//! looks like another tenant's (`team-b.orders`, asked by `team-a`) is
//! prefixed like any other, so it stays inside (`team-a.team-b.orders`).
//!
//! Which fields are names is the protocol's own fact: kafka-protocol types
//! them (`TopicName`, `GroupId`, `TransactionalId`), and the wire layouts
//! (`wire`, generated from the crate) carry that type, with the few names
//! it types as plain strings (a coordinator's key, a configs resource's
//! name) marked by the generator. So every API and version the layouts
//! know is renamed by one walk ([`rename`]); [`renames`] is the table.

use std::sync::LazyLock;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader as KHeader, ResponseHeader};
use kafka_protocol::protocol::Decodable;

use super::frame::{FrameError, RequestHeader};
use super::rewrite::RewriteError;
use super::wire::{self, Entity, Names, Renamed, Schema, Ty, rename};

/// One tenant's prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant<'p> {
    prefix: &'p str,
}

impl<'p> Tenant<'p> {
    /// A tenant whose names upstream begin with `prefix`.
    pub fn new(prefix: &'p str) -> Tenant<'p> {
        Tenant { prefix }
    }

    /// Its prefix.
    pub fn prefix(&self) -> &'p str {
        self.prefix
    }

    /// The request `frame` (length prefix included) to `header`, its names
    /// prefixed.
    pub fn request(&self, frame: &Bytes, header: &RequestHeader) -> Result<Bytes, FrameError> {
        let bad = |reason: String| FrameError::BadRequest {
            api: crate::api_name(header.api_key).to_owned(),
            version: header.api_version,
            reason,
        };
        let api = ApiKey::try_from(header.api_key).map_err(|()| bad("unknown API".into()))?;
        // A request of an API only its response names things in (ListGroups).
        let Some(schema) = wire::request_schema(api).filter(|s| names_in(s, header.api_version))
        else {
            return Ok(frame.clone());
        };
        let mut body = frame.slice(4..);
        KHeader::decode(&mut body, api.request_header_version(header.api_version))
            .map_err(|e| bad(e.to_string()))?;
        let body_at = frame.len() - body.len();
        let mut names = Up(self);
        renamed(frame, body_at, schema, header.api_version, &mut names).map_err(bad)
    }

    /// The response `frame` (length prefix included) to `header`, its names
    /// given back without the prefix and other tenants' entries dropped.
    pub fn response(&self, frame: &Bytes, header: &RequestHeader) -> Result<Bytes, RewriteError> {
        let bad = |reason: String| RewriteError {
            api: crate::api_name(header.api_key).to_owned(),
            version: header.api_version,
            reason,
        };
        let api = ApiKey::try_from(header.api_key).map_err(|()| bad("unknown API".into()))?;
        let Some(schema) = wire::response_schema(api).filter(|s| names_in(s, header.api_version))
        else {
            return Ok(frame.clone());
        };
        let mut body = frame.slice(4..);
        ResponseHeader::decode(&mut body, api.response_header_version(header.api_version))
            .map_err(|e| bad(e.to_string()))?;
        let body_at = frame.len() - body.len();
        let mut names = Down(self);
        renamed(frame, body_at, schema, header.api_version, &mut names).map_err(bad)
    }

    /// The prefix as a regular expression matching itself (a prefix is
    /// letters, digits, `.`, `_` and `-`: only `.` means more).
    fn regex_prefix(&self) -> String {
        self.prefix.replace('.', "\\.")
    }

    /// `text` with the prefix taken off every name in it that starts
    /// with it (at the start, or after a character no name has).
    fn unprefixed_text(&self, text: &str) -> Option<String> {
        if self.prefix.is_empty() || !text.contains(self.prefix) {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find(self.prefix) {
            let starts_name = rest[..i]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || "._-".contains(c)));
            out.push_str(&rest[..i]);
            if !starts_name {
                out.push_str(self.prefix);
            }
            rest = &rest[i + self.prefix.len()..];
        }
        out.push_str(rest);
        Some(out)
    }
}

/// Requests: every name prefixed (an empty one, a topic named by id, stays).
struct Up<'a>(&'a Tenant<'a>);

impl Names for Up<'_> {
    fn name(&mut self, entity: Entity, name: &str) -> Renamed {
        if name.is_empty() {
            return Renamed::Keep;
        }
        if entity == Entity::TopicRegex {
            // Matched against whole names: only the tenant's can match.
            return Renamed::To(format!("{}(?:{name})", self.0.regex_prefix()));
        }
        Renamed::To(format!("{}{name}", self.0.prefix))
    }
    fn message(&mut self, _: &str) -> Option<String> {
        None
    }
}

/// Responses: the prefix taken off; what lacks it is another tenant's.
struct Down<'a>(&'a Tenant<'a>);

impl Names for Down<'_> {
    fn name(&mut self, entity: Entity, name: &str) -> Renamed {
        if name.is_empty() {
            return Renamed::Keep;
        }
        if entity == Entity::TopicRegex {
            let inner = (name.strip_prefix(&self.0.regex_prefix()))
                .and_then(|r| r.strip_prefix("(?:"))
                .and_then(|r| r.strip_suffix(')'));
            return inner.map_or(Renamed::Keep, |r| Renamed::To(r.to_owned()));
        }
        match name.strip_prefix(self.0.prefix) {
            Some(own) => Renamed::To(own.to_owned()),
            None => Renamed::Drop,
        }
    }
    fn message(&mut self, text: &str) -> Option<String> {
        self.0.unprefixed_text(text)
    }
}

/// The frame with its body (from `body_at`) renamed, the length prefix set
/// to the new size.
fn renamed(
    frame: &Bytes,
    body_at: usize,
    schema: &Schema,
    version: i16,
    names: &mut dyn Names,
) -> Result<Bytes, String> {
    let body = &frame[body_at..];
    let mut out = BytesMut::with_capacity(frame.len() + 256);
    out.put_i32(0);
    out.put_slice(&frame[4..body_at]);
    let used = rename(schema, version, body, names, &mut out).map_err(|e| e.to_string())?;
    // Bytes after the message pass on, as the proxy's rewrites keep them
    // (librdkafka's Metadata v12 request carries three).
    let trailing = &body[used..];
    if trailing.len() > crate::MAX_TRAILING_BYTES {
        return Err(format!("{} bytes after the message", trailing.len()));
    }
    out.put_slice(trailing);
    let size = i32::try_from(out.len() - 4).map_err(|_| "too large".to_owned())?;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Ok(out.freeze())
}

/// Whether requests or responses of `api_key` name anything a tenant's
/// prefix applies to, in some version: the APIs a tenant's names are
/// renamed in (the docs' table).
pub fn renames(api_key: i16) -> bool {
    let Ok(api) = ApiKey::try_from(api_key) else {
        return false;
    };
    let v = api.valid_versions();
    (v.min..=v.max)
        .any(|version| renames_request(api_key, version) || renames_response(api_key, version))
}

/// Whether a request of `api_key` at `version` names anything a tenant's
/// prefix applies to (it is held whole and renamed; a Fetch from v13 names
/// topics by id only, and streams).
pub fn renames_request(api_key: i16, version: i16) -> bool {
    named(api_key, version).0
}

/// Whether the response to a request of `api_key` at `version` does.
pub fn renames_response(api_key: i16, version: i16) -> bool {
    named(api_key, version).1
}

/// Per API and version: (its request names things, its response does).
fn named(api_key: i16, version: i16) -> (bool, bool) {
    type Table = std::collections::HashMap<(i16, i16), (bool, bool)>;
    static TABLE: LazyLock<Table> = LazyLock::new(|| {
        let mut table = Table::new();
        for api in ApiKey::iter() {
            let v = api.valid_versions();
            for version in v.min..=v.max {
                let req = wire::request_schema(api).is_some_and(|s| names_in(s, version));
                let resp = wire::response_schema(api).is_some_and(|s| names_in(s, version));
                if req || resp {
                    table.insert((api as i16, version), (req, resp));
                }
            }
        }
        table
    });
    TABLE.get(&(api_key, version)).copied().unwrap_or_default()
}

/// Whether a tenant's request of `api_key` is refused: the cluster's own
/// administration (ACLs, quotas, SCRAM users, log dirs, reassignments,
/// brokers' and controllers' APIs), which no tenant of a shared cluster is
/// given, and which would list or change other tenants' resources.
pub fn refuses(api_key: i16) -> bool {
    use sluice_config::policy::{Operation, operation_of};
    matches!(
        operation_of(api_key),
        Some(Operation::AlterCluster | Operation::DescribeCluster)
    )
}

/// Whether a layout holds a name at `version`.
fn names_in(schema: &Schema, version: i16) -> bool {
    fn ty(t: &Ty, version: i16) -> bool {
        match t {
            Ty::Name(_) => true,
            Ty::Array(inner) => ty(inner, version),
            Ty::Struct(s) | Ty::OptionStruct(s) => names_in(s, version),
            _ => false,
        }
    }
    schema.field_types_at(version).any(|t| ty(t, version))
}

pub mod produce;
#[cfg(test)]
mod tests;
