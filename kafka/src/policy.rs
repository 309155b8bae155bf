//! A topic policy applied to one request, per topic, the way a broker
//! applies its ACLs: the request is decoded, its topics judged one by one
//! (by the caller's `keep`), and then
//!
//! - every topic allowed: the request goes on as it came, byte for byte;
//! - every topic denied: the proxy answers, each topic with
//!   TOPIC_AUTHORIZATION_FAILED;
//! - some denied: the allowed part is encoded again and goes on, and the
//!   upstream's response is merged with the denied topics' errors ([`Merge`]);
//!   a Fetch's response is not held for it: the denied topics' entries are
//!   put first in its topics as it streams ([`Prepended`]).
//!
//! Requests that list every topic by naming none (Metadata, OffsetFetch)
//! go on as they came, and their responses leave out what `keep` refuses.
//! Topics named by id only (Fetch and Produce v13 on) are judged by the
//! name a Metadata response taught ([`TopicIds`]); an id not learned yet gets
//! UNKNOWN_TOPIC_ID (the client refreshes its metadata), never forwarded;
//! Metadata's topics named by id go on, and its response, which names
//! them, refuses those denied (TOPIC_AUTHORIZATION_FAILED, no name).
//! APIs that name topics in ways the proxy cannot judge (share fetches,
//! brokers' APIs) are never split: any denied topic refuses the whole
//! request.

use std::borrow::Cow;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader as KHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::codec::{decode, encode, with_header};
use super::frame::{FrameError, RequestHeader};
use super::wire::Checked;

mod apis;
mod fetch;
mod fetch_head;
mod ids;
mod listed;
mod merge;
mod prepend;
mod produce;

pub use apis::{Handling, handling, policed};
pub use fetch_head::{FetchHead, TopicRef, fetch_head};
pub use ids::{MAX_TOPIC_IDS, TopicIds, UNKNOWN_TOPIC_ID, Uuid};
use merge::Denied;
pub use merge::Merge;
pub use prepend::{Prepended, TopicsCount};
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
    /// Per topic, as in [`Topics::names`]: whether it is named by an id
    /// only that its response names (Metadata): it goes on, and is judged
    /// in the response ([`Topics::refuse_named`]), never answered
    /// UNKNOWN_TOPIC_ID for an id the proxy has not learned.
    fn judged_in_response(&self) -> Vec<bool> {
        Vec::new()
    }
    /// Refuses, in the response, the topics `keep` refuses by the names
    /// it gives them (topics asked by id only).
    fn refuse_named(
        _response: &mut Self::Response,
        _keep: &mut dyn FnMut(&str) -> bool,
        _version: i16,
    ) {
    }
    /// The entries of the refused topics (`denied`, and `unknown` ids),
    /// encoded to go first in the response as it streams; `None`: the
    /// response is held and merged.
    fn prepended(
        _denied: &Self,
        _unknown: Option<&Self>,
        _version: i16,
    ) -> Result<Option<Prepended>, String> {
        Ok(None)
    }
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
        let later = request.judged_in_response();
        let verdicts: Vec<Verdict> = request
            .resolved(self.ids)
            .into_iter()
            .enumerate()
            .map(|(i, name)| match name {
                _ if later.get(i) == Some(&true) => Verdict::Allowed,
                None => Verdict::Unknown,
                Some(name) if keep(&name) => Verdict::Allowed,
                Some(_) => Verdict::Denied,
            })
            .collect();
        let count = |v: Verdict| verdicts.iter().filter(|k| **k == v).count();
        let (denied, unknown) = (count(Verdict::Denied), count(Verdict::Unknown));
        let refused = denied + unknown;
        let (hide, by_id) = (request.lists_all(version), later.contains(&true));
        if refused == 0 && !hide && !by_id {
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
        let refusal = Denied {
            request: part(Verdict::Denied),
            unknown: unknowns,
            hide,
            by_id,
        };
        Ok(Policed::Split {
            request: forwarded,
            merge: self.merge(refusal, refused > 0, version)?,
            denied,
        })
    }

    /// What the response to a split request is merged with: `refusal`,
    /// its entries encoded now when they go first in the streamed response
    /// (only when some topics are `refused`).
    fn merge<T: Topics>(
        &self,
        refusal: Denied<T>,
        refused: bool,
        version: i16,
    ) -> Result<Merge, String> {
        let prepended = if refused {
            T::prepended(&refusal.request, refusal.unknown.as_ref(), version)?
        } else {
            None
        };
        Ok(Merge {
            api: self.api,
            version,
            refusal: Box::new(refusal),
            prepended,
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
