//! DeleteTopics: names before v6; from v6 each entry names its topic by
//! name or by id. An entry by id is judged by the name Metadata taught
//! ([`TopicIds`]; not learned yet: UNKNOWN_TOPIC_ID). An entry naming both
//! is refused with INVALID_REQUEST, as Kafka refuses it, and never
//! forwarded: the proxy would judge the name and the broker act on the id.

use std::borrow::Cow;

use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::{Asked, TopicIds, Topics};

/// Kafka's message for an entry naming a topic by name and by id.
const BOTH: &str = "You may not specify both topic name and topic id.";

fn name_of(t: &DeleteTopicState) -> &str {
    t.name.as_ref().map_or("", |n| n.as_str())
}

/// Whether an entry names its topic by id only.
fn by_id(t: &DeleteTopicState) -> bool {
    name_of(t).is_empty() && !t.topic_id.is_nil()
}

impl Topics for DeleteTopicsRequest {
    type Response = DeleteTopicsResponse;
    fn names(&self) -> Vec<&str> {
        let named = self.topic_names.iter().map(|n| n.as_str());
        named.chain(self.topics.iter().map(name_of)).collect()
    }
    /// An entry with neither a name nor an id is an unknown id.
    fn resolved(&self, ids: &TopicIds) -> Vec<Option<Cow<'_, str>>> {
        let named = self.topic_names.iter().map(|n| Some(n.as_str().into()));
        let states = self.topics.iter().map(|t| match name_of(t) {
            "" if t.topic_id.is_nil() => None,
            "" => ids.name(t.topic_id).map(Cow::Owned),
            name => Some(name.into()),
        });
        named.chain(states).collect()
    }
    fn invalid(&self) -> Vec<bool> {
        let named = self.topic_names.iter().map(|_| false);
        let both = |t: &DeleteTopicState| !name_of(t).is_empty() && !t.topic_id.is_nil();
        named.chain(self.topics.iter().map(both)).collect()
    }
    fn asked(&self, _version: i16) -> Option<Asked> {
        let ids = self.topics.iter().filter(|t| by_id(t)).map(|t| t.topic_id);
        Some(Asked::new(self.names(), ids))
    }
    fn retain(&mut self, keep: &mut dyn FnMut(&str) -> bool, _others: bool) {
        self.topic_names.retain(|n| keep(n.as_str()));
        self.topics.retain(|t| keep(name_of(t)));
    }
    fn refuse(&self, into: &mut DeleteTopicsResponse, code: i16) {
        let named = self
            .topic_names
            .iter()
            .map(|n| (Some(n.clone()), Default::default()));
        let states = self.topics.iter().map(|t| (t.name.clone(), t.topic_id));
        for (name, topic_id) in named.chain(states) {
            let mut out = delete_topics_response::DeletableTopicResult::default();
            out.name = name;
            out.topic_id = topic_id;
            out.error_code = code;
            if code == super::INVALID_REQUEST {
                out.error_message = Some(StrBytes::from_static_str(BOTH));
            }
            into.responses.push(out);
        }
    }
}
