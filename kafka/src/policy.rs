//! A topic policy applied to one request, per topic, the way a broker
//! applies its ACLs: the request is decoded, its topics judged one by one
//! (by the caller's `keep`), and then
//!
//! - every topic allowed: the request goes on as it came, byte for byte;
//! - every topic denied: the proxy answers, each topic with
//!   TOPIC_AUTHORIZATION_FAILED;
//! - some denied: the allowed part is encoded again and goes on, and the
//!   upstream's response is merged with the denied topics' errors ([`Merge`]).
//!
//! Requests that list every topic by naming none (Metadata, OffsetFetch)
//! go on as they came, and their responses leave out what `keep` refuses.
//! Topics named by id only (Fetch v13 on) are judged by the name a
//! Metadata response taught ([`TopicIds`]); an id not learned yet gets
//! UNKNOWN_TOPIC_ID (the client refreshes its metadata), never forwarded.
//! APIs that name topics in ways the proxy cannot judge (share fetches,
//! brokers' APIs) are never split: any denied topic refuses the whole
//! request.

use std::borrow::Cow;
use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader as KHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::codec::{decode, encode, with_header};
use super::frame::{FrameError, RequestHeader};
use super::wire::{self, Checked};

mod apis;
mod fetch;
mod ids;
mod listed;
mod produce;

pub use apis::{Handling, handling, policed};
pub use ids::{MAX_TOPIC_IDS, TopicIds, UNKNOWN_TOPIC_ID, Uuid};
pub use produce::{ProduceHead, produce_head};

/// Kafka's TOPIC_AUTHORIZATION_FAILED: what a broker answers for a topic
/// its ACLs refuse; clients report it per topic and do not retry.
pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

/// What becomes of one request.
#[derive(Debug)]
pub enum Policed {
    /// No topic is denied: the request goes on as it came.
    Forward,
    /// Every topic is denied (or named by an id not learned yet): the
    /// proxy answers with this response frame.
    Answer {
        /// The response frame, length prefix included.
        frame: Bytes,
        /// How many topics the policy denied.
        denied: usize,
    },
    /// Some topics are denied, or the response must be filtered.
    Split {
        /// What goes upstream instead of the request; `None`: the request
        /// as it came.
        request: Option<Bytes>,
        /// What the upstream's response is merged with.
        merge: Merge,
        /// How many topics were denied.
        denied: usize,
    },
}

/// The denied part of a split request (and whether the response lists
/// topics to filter), kept until its response comes.
pub struct Merge {
    api: ApiKey,
    version: i16,
    refusal: Box<dyn Refusal>,
}

impl fmt::Debug for Merge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Merge({:?} v{})", self.api, self.version)
    }
}

impl Merge {
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
trait Refusal: Send + Sync {
    fn merge(
        &self,
        body: &mut Bytes,
        version: i16,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<BytesMut, String>;
}

/// A request message that names topics, and how to refuse them.
trait Topics: Checked + Encodable + Clone + Send + Sync + 'static {
    /// Its response.
    type Response: Checked + Encodable + Default;
    /// Whether a request may be split (its response held and merged).
    const SPLIT: bool = true;
    /// How it is policed (for the docs' table).
    const HANDLING: Handling = Handling::PerTopic;
    /// The topic names it carries, once per mention ("" for a topic named
    /// by id only: judged like any name, so only a policy that allows the
    /// operation on every topic lets it through).
    fn names(&self) -> Vec<&str>;
    /// The topic names, once per mention as in [`Topics::names`], with
    /// topics named by id looked up in `ids`: `None` for an id not learned
    /// yet (answered UNKNOWN_TOPIC_ID).
    fn resolved(&self, _ids: &TopicIds) -> Vec<Option<Cow<'_, str>>> {
        self.names().into_iter().map(|n| Some(n.into())).collect()
    }
    /// Whether it names every topic without listing them (null lists,
    /// topics by id only): refused whole unless the operation is allowed
    /// on every topic (which the caller checks before policing).
    fn names_every_topic(&self) -> bool {
        false
    }
    /// Whether it names something besides topics (a broker's configs),
    /// which goes on even when every topic is denied.
    fn names_others(&self) -> bool {
        false
    }
    /// Keeps the topics `keep` allows (called once per name, in the order
    /// of [`Topics::names`]); what names no topic stays when `others`.
    fn retain(&mut self, keep: &mut dyn FnMut(&str) -> bool, others: bool);
    /// Adds an entry with `code` to `into` for each topic of `self`.
    fn refuse(&self, into: &mut Self::Response, code: i16);
    /// Whether the proxy answers it itself when every topic is denied
    /// (Metadata is forwarded naming none: its answer needs the brokers).
    fn answered_whole(&self, _version: i16) -> bool {
        true
    }
    /// Whether it asks for every topic (the response is filtered).
    fn lists_all(&self, _version: i16) -> bool {
        false
    }
    /// Leaves out of the response what `keep` refuses (when it lists all).
    fn hide(_response: &mut Self::Response, _keep: &mut dyn FnMut(&str) -> bool) {}
}

struct Denied<T> {
    request: T,
    /// The topics named by ids not learned yet, when there are some.
    unknown: Option<T>,
    hide: bool,
}

/// Adds the refused topics' errors to `into`: the denied ones'
/// TOPIC_AUTHORIZATION_FAILED, the unknown ids' UNKNOWN_TOPIC_ID.
fn refuse_all<T: Topics>(into: &mut T::Response, denied: &T, unknown: Option<&T>) {
    denied.refuse(into, TOPIC_AUTHORIZATION_FAILED);
    if let Some(unknown) = unknown {
        unknown.refuse(into, UNKNOWN_TOPIC_ID);
    }
}

/// One topic's fate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Allowed,
    Denied,
    /// Named by an id the proxy has not learned.
    Unknown,
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
        refuse_all(&mut response, &self.request, self.unknown.as_ref());
        encode(&response, version)
    }
}

/// Applies `keep` (true: allowed) to every topic of `frame`, a request
/// (prefix included) to `header`; topics named by id are looked up in
/// `ids`. APIs that name no topics go on.
pub fn police(
    frame: &Bytes,
    header: &RequestHeader,
    ids: &TopicIds,
    keep: &mut dyn FnMut(&str) -> bool,
) -> Result<Policed, FrameError> {
    let version = header.api_version;
    let Ok(api) = ApiKey::try_from(header.api_key) else {
        return Ok(Policed::Forward);
    };
    let fail = |reason: String| bad(api, version, reason);
    let mut buf = frame.slice(4..);
    KHeader::decode(&mut buf, api.request_header_version(version))
        .map_err(|e| fail(e.to_string()))?;
    let at = Request {
        frame,
        body_at: frame.len() - buf.len(),
        api,
        correlation_id: header.correlation_id,
        ids,
    };
    apis::dispatch(&at, &mut buf, version, keep).map_err(fail)
}

/// [`Request::judge`], as a plain function (one per API in a table).
fn judge<T: Topics>(
    at: &Request<'_>,
    body: &mut Bytes,
    version: i16,
    keep: &mut dyn FnMut(&str) -> bool,
) -> Result<Policed, String> {
    at.judge::<T>(body, version, keep)
}

/// The request being policed.
struct Request<'a> {
    frame: &'a Bytes,
    body_at: usize,
    api: ApiKey,
    correlation_id: i32,
    ids: &'a TopicIds,
}

impl Request<'_> {
    /// Judges a decoded request of type `T`.
    fn judge<T: Topics>(
        &self,
        body: &mut Bytes,
        version: i16,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Policed, String> {
        let request: T = decode(body, version)?;
        if request.names_every_topic() {
            return Ok(Policed::Answer {
                frame: self.answer(&request, None, version)?,
                denied: 1,
            });
        }
        let verdicts: Vec<Verdict> = request
            .resolved(self.ids)
            .into_iter()
            .map(|name| match name {
                None => Verdict::Unknown,
                Some(name) if keep(&name) => Verdict::Allowed,
                Some(_) => Verdict::Denied,
            })
            .collect();
        let count = |v: Verdict| verdicts.iter().filter(|k| **k == v).count();
        let (denied, unknown) = (count(Verdict::Denied), count(Verdict::Unknown));
        let refused = denied + unknown;
        let hide = request.lists_all(version);
        if refused == 0 && !hide {
            return Ok(Policed::Forward);
        }
        let part = |wanted: Verdict| {
            let mut verdict = verdicts.iter();
            let mut part = request.clone();
            let others = wanted == Verdict::Allowed;
            part.retain(&mut |_| verdict.next() == Some(&wanted), others);
            part
        };
        let unknowns = (unknown > 0).then(|| part(Verdict::Unknown));
        if refused > 0 && !T::SPLIT {
            let frame = self.answer(&request, None, version)?;
            return Ok(Policed::Answer { frame, denied });
        }
        let every = refused == verdicts.len() && !hide && !request.names_others();
        if every && request.answered_whole(version) {
            let frame = self.answer(&part(Verdict::Denied), unknowns.as_ref(), version)?;
            return Ok(Policed::Answer { frame, denied });
        }
        let forwarded = match refused {
            0 => None,
            _ => Some(self.reframe(&part(Verdict::Allowed), version)?),
        };
        Ok(Policed::Split {
            request: forwarded,
            merge: Merge {
                api: self.api,
                version,
                refusal: Box::new(Denied {
                    request: part(Verdict::Denied),
                    unknown: unknowns,
                    hide,
                }),
            },
            denied,
        })
    }

    /// The proxy's answer refusing every topic of `denied` (and of
    /// `unknown`, with UNKNOWN_TOPIC_ID).
    fn answer<T: Topics>(
        &self,
        denied: &T,
        unknown: Option<&T>,
        version: i16,
    ) -> Result<Bytes, String> {
        let mut response = T::Response::default();
        refuse_all(&mut response, denied, unknown);
        let body = encode(&response, version)?;
        let mut header = ResponseHeader::default();
        header.correlation_id = self.correlation_id;
        with_header(&header, self.api.response_header_version(version), &body)
    }

    /// The request's own header bytes, then `body` encoded.
    fn reframe<T: Topics>(&self, body: &T, version: i16) -> Result<Bytes, String> {
        let head = &self.frame[4..self.body_at];
        let size = body.compute_size(version).map_err(|e| e.to_string())?;
        let total = i32::try_from(head.len() + size).map_err(|_| "request too large".to_owned())?;
        let mut out = BytesMut::with_capacity(4 + head.len() + size);
        out.put_i32(total);
        out.put_slice(head);
        body.encode(&mut out, version).map_err(|e| e.to_string())?;
        Ok(out.freeze())
    }
}

fn bad(api: ApiKey, version: i16, reason: String) -> FrameError {
    FrameError::BadRequest {
        api: format!("{api:?}"),
        version,
        reason,
    }
}

/// The client id in a request frame's header (prefix included): after the
/// key, version and correlation id, a nullable string. `None` when null or
/// not all there yet; the policy matches a missing id as "".
pub fn client_id(frame: &[u8]) -> Option<&str> {
    let len = i16::from_be_bytes(frame.get(12..14)?.try_into().ok()?);
    let len = usize::try_from(len).ok()?;
    std::str::from_utf8(frame.get(14..14 + len)?).ok()
}

#[cfg(test)]
mod tests;
