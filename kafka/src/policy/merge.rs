//! What the response to a split request is merged with: the denied part
//! of the request, kept until its response comes (a Fetch's refused
//! entries encoded to go first in it as it streams: `prepend`).

use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader};
use kafka_protocol::protocol::Decodable;

use super::{Prepended, Topics, bad, refuse_all};
use crate::codec::{decode, encode, with_header};
use crate::frame::FrameError;
use crate::wire;

/// The denied part of a split request (and whether the response lists
/// topics to filter), kept until its response comes.
pub struct Merge {
    pub(super) api: ApiKey,
    pub(super) version: i16,
    pub(super) refusal: Box<dyn Refusal>,
    pub(super) prepended: Option<Prepended>,
}

impl fmt::Debug for Merge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Merge({:?} v{})", self.api, self.version)
    }
}

impl Merge {
    /// The refused topics' entries, when they go first in the upstream's
    /// response as it streams (Fetch) rather than merged into it held.
    pub fn prepended(&self) -> Option<&Prepended> {
        self.prepended.as_ref()
    }

    /// The upstream's response `frame` (prefix included) with the denied
    /// topics' errors added, and the listed topics `keep` refuses left out.
    pub fn apply(
        &self,
        frame: &Bytes,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Bytes, FrameError> {
        let fail = |reason: String| bad(self.api, self.version, reason);
        let header_version = self.api.response_header_version(self.version);
        let mut buf = frame.slice(4..);
        wire::check(&wire::RESPONSE_HEADER, header_version, &buf)
            .map_err(|e| fail(e.to_string()))?;
        let header =
            ResponseHeader::decode(&mut buf, header_version).map_err(|e| fail(e.to_string()))?;
        let mut body = self
            .refusal
            .merge(&mut buf, self.version, keep)
            .map_err(fail)?;
        body.put_slice(&buf);
        with_header(&header, header_version, &body).map_err(fail)
    }
}

/// How one API's denied part is merged into its response.
pub(super) trait Refusal: Send + Sync {
    fn merge(
        &self,
        body: &mut Bytes,
        version: i16,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<BytesMut, String>;
}

pub(super) struct Denied<T> {
    pub(super) request: T,
    /// The topics named by ids not learned yet, when there are some.
    pub(super) unknown: Option<T>,
    /// The response lists every topic: what `keep` refuses is left out.
    pub(super) hide: bool,
    /// Topics named by id only are judged in the response.
    pub(super) by_id: bool,
}

impl<T: Topics> Refusal for Denied<T> {
    fn merge(
        &self,
        body: &mut Bytes,
        version: i16,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<BytesMut, String> {
        let mut response: T::Response = decode(body, version)?;
        if self.hide {
            T::hide(&mut response, keep);
        }
        if self.by_id {
            T::refuse_named(&mut response, keep, version);
        }
        refuse_all(&mut response, &self.request, self.unknown.as_ref());
        encode(&response, version)
    }
}
