//! What the response to a split request is merged with: the refused parts
//! of the request, kept until its response comes (a Fetch's refused
//! entries encoded to go first in it as it streams: `prepend`), and what
//! of the response the client may see ([`Listing`]).

use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader};
use kafka_protocol::protocol::Decodable;

use super::listing::{Listing, Shown};
use super::{Prepended, Refused, Topics, UNKNOWN_SERVER_ERROR, bad};
use crate::codec::{decode, encode, with_header};
use crate::frame::FrameError;
use crate::wire;

/// The denied part of a split request (and whether the response lists
/// topics to filter), kept until its response comes.
pub struct Merge {
    pub(super) api: ApiKey,
    pub(super) version: i16,
    pub(super) correlation_id: i32,
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

    /// The proxy's own answer when the upstream's response cannot be
    /// judged (it does not decode): the forwarded topics with
    /// UNKNOWN_SERVER_ERROR (and the request's top-level error, where its
    /// response has one), the refused ones as ever. The connection stays
    /// open; the client retries.
    pub fn refused(&self) -> Result<Bytes, FrameError> {
        let fail = |reason: String| bad(self.api, self.version, reason);
        let body = self.refusal.refuse_whole(self.version).map_err(fail)?;
        let mut header = ResponseHeader::default();
        header.correlation_id = self.correlation_id;
        let header_version = self.api.response_header_version(self.version);
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
    /// A response refusing every topic of the request ([`Merge::refused`]).
    fn refuse_whole(&self, version: i16) -> Result<BytesMut, String>;
}

pub(super) struct Denied<T> {
    /// The part of the request forwarded (refused only when its response
    /// cannot be read).
    pub(super) allowed: T,
    /// The refused topics, whose errors are added to the response.
    pub(super) refused: Refused<T>,
    /// What of the response the client may see.
    pub(super) listing: Listing,
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
        if self.by_id {
            T::refuse_named(&mut response, keep, version);
        }
        if !matches!(self.listing, Listing::Unfiltered) {
            let listing = &self.listing;
            response.retain_shown(&mut |name, id| listing.shows(name, id, keep));
        }
        self.refused.refuse(&mut response);
        encode(&response, version)
    }

    fn refuse_whole(&self, version: i16) -> Result<BytesMut, String> {
        let mut response = T::Response::default();
        self.allowed.fail(&mut response, UNKNOWN_SERVER_ERROR);
        self.refused.refuse(&mut response);
        encode(&response, version)
    }
}
