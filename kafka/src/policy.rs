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
//! Whatever the request said, a response that lists topics (every policed
//! API's but Produce's and Fetch's, which stream) is judged by what it
//! lists: it keeps only the topics the client may see and, when the
//! request named topics, only those it named ([`Listing`]); the broker's
//! reading of a request is never trusted (tansu answers a Metadata naming
//! no topic with every topic). Requests that list every topic by naming
//! none (Metadata, OffsetFetch, DescribeTopicPartitions) go on as they
//! came. Topics named by id only (Fetch, Produce v13, DeleteTopics v6) are
//! judged by the name a Metadata response taught ([`TopicIds`]); an id not
//! learned yet gets UNKNOWN_TOPIC_ID (the client refreshes its metadata),
//! never forwarded; an entry naming a topic by name and by id at once gets
//! INVALID_REQUEST, never forwarded (the proxy would judge the name, the
//! broker act on the id); Metadata's topics named by id go on, and its
//! response, which names them, refuses those denied
//! (TOPIC_AUTHORIZATION_FAILED, no name). APIs that name topics in ways
//! the proxy cannot judge (share fetches, brokers' APIs) are never split:
//! any denied topic refuses the whole request.

use std::borrow::Cow;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader as KHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::frame::{FrameError, RequestHeader};
use super::wire::Checked;

mod apis;
mod brokers;
mod delete_topics;
mod fetch;
mod fetch_head;
mod ids;
mod judge;
mod listed;
mod listing;
mod merge;
mod prepend;
mod produce;

pub use apis::{Handling, handling, policed};
pub use fetch_head::{FetchHead, TopicRef, fetch_head};
pub use ids::{MAX_TOPIC_IDS, TopicIds, UNKNOWN_TOPIC_ID, Uuid};
use judge::Request;
use judge::judge;
use listing::{Asked, Shown};
pub use merge::Merge;
pub use prepend::{Prepended, TopicsCount};
pub use produce::{ProduceHead, produce_head};

/// Kafka's TOPIC_AUTHORIZATION_FAILED: what a broker answers for a topic
/// its ACLs refuse; clients report it per topic and do not retry.
pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

/// Kafka's UNKNOWN_SERVER_ERROR: what the proxy answers for the topics
/// it forwarded when the upstream's answer cannot be judged.
pub const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Kafka's INVALID_REQUEST: what a broker answers for an entry naming a
/// topic both by name and by id.
pub const INVALID_REQUEST: i16 = 42;

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
    /// Its response, and what of it a client may see.
    type Response: Checked + Encodable + Default + Shown;
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
    /// Per topic, as in [`Topics::names`]: whether it is named both by
    /// name and by id (answered INVALID_REQUEST, never forwarded: the
    /// broker may act on either).
    fn invalid(&self) -> Vec<bool> {
        Vec::new()
    }
    /// The topics its response may list: those it names (by name, and by
    /// id where it names them so), or every topic (`None`) when it
    /// [lists all](Topics::lists_all).
    fn asked(&self, version: i16) -> Option<Asked> {
        (!self.lists_all(version)).then(|| Asked::new(self.names(), []))
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
    /// Like [`Topics::refuse`], and sets the response's own error to
    /// `code` where it has one for a request naming no topics (a list of
    /// all of them).
    fn fail(&self, into: &mut Self::Response, code: i16) {
        self.refuse(into, code);
    }
    /// Whether the proxy answers it itself when every topic is denied
    /// (Metadata is forwarded naming none: its answer needs the brokers).
    fn answered_whole(&self, _version: i16) -> bool {
        true
    }
    /// Whether it asks for every topic (its response keeps every topic
    /// the client may see).
    fn lists_all(&self, _version: i16) -> bool {
        false
    }
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

/// The refused parts of a request, each refused with its own error.
struct Refused<T> {
    /// The topics the policy denies: TOPIC_AUTHORIZATION_FAILED.
    denied: T,
    /// The topics named by ids not learned yet: UNKNOWN_TOPIC_ID.
    unknown: Option<T>,
    /// The entries naming a topic by name and by id: INVALID_REQUEST.
    invalid: Option<T>,
}

impl<T: Topics> Refused<T> {
    /// Adds every refused topic's error to `into`.
    fn refuse(&self, into: &mut T::Response) {
        refuse_all(into, &self.denied, self.unknown.as_ref());
        if let Some(invalid) = &self.invalid {
            invalid.refuse(into, INVALID_REQUEST);
        }
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
