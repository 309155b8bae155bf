//! Fetch under a topic policy: split per topic like the other APIs, its
//! response not held for it: the refused topics' entries go first in it as
//! it streams ([`Prepended`]). From v13 it names topics by id only: judged
//! by the names Metadata taught.

use std::borrow::Cow;

use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse};

use super::{Prepended, TopicIds, Topics, refuse_all};

impl Topics for FetchRequest {
    type Response = FetchResponse;
    fn names(&self) -> Vec<&str> {
        self.topics.iter().map(|t| t.topic.as_str()).collect()
    }
    fn resolved(&self, ids: &TopicIds) -> Vec<Option<Cow<'_, str>>> {
        self.topics
            .iter()
            .map(|t| {
                if t.topic.is_empty() && !t.topic_id.is_nil() {
                    ids.name(t.topic_id).map(Cow::Owned)
                } else {
                    Some(Cow::Borrowed(t.topic.as_str()))
                }
            })
            .collect()
    }
    /// Topics the session forgets (v7 on) stay in every part: forgetting
    /// reads nothing.
    fn retain(&mut self, keep: &mut dyn FnMut(&str) -> bool, _others: bool) {
        self.topics.retain(|t| keep(t.topic.as_str()));
    }
    fn refuse(&self, into: &mut FetchResponse, code: i16) {
        for t in &self.topics {
            let mut out = FetchableTopicResponse::default();
            out.topic = t.topic.clone();
            out.topic_id = t.topic_id;
            out.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut o = PartitionData::default();
                    o.partition_index = p.partition;
                    o.error_code = code;
                    o.high_watermark = -1;
                    o
                })
                .collect();
            into.responses.push(out);
        }
    }
    /// The refused topics' entries, as the response at `version` carries
    /// them: by name before v13, by id on (what the client sent).
    fn prepended(
        denied: &Self,
        unknown: Option<&Self>,
        version: i16,
    ) -> Result<Option<Prepended>, String> {
        let mut response = FetchResponse::default();
        refuse_all(&mut response, denied, unknown);
        Prepended::encode(&response.responses, version).map(Some)
    }
}
