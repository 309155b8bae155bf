//! The APIs that ask for every topic by naming none: Metadata (topics
//! null, or empty in v0), OffsetFetch (a group's topics null) and
//! DescribeTopicPartitions (topics empty). Named topics are judged like
//! any others; a list of all of them leaves out, in the response, the
//! topics the client may not describe. Metadata's topics named by id only
//! go on, judged by the names its response gives them: a denied one is
//! answered as a broker's ACLs answer it (TOPIC_AUTHORIZATION_FAILED, its
//! id and no name); one named by name and by id at once is refused
//! (INVALID_REQUEST).

use kafka_protocol::messages::*;

use super::{Asked, Handling, TOPIC_AUTHORIZATION_FAILED, Topics};

/// The first Metadata version whose response names may be null.
const NULL_NAMES: i16 = 12;

fn name_of(name: &Option<TopicName>) -> &str {
    name.as_ref().map_or("", |n| n.as_str())
}

/// Whether a Metadata topic is named by id only.
fn by_id(t: &metadata_request::MetadataRequestTopic) -> bool {
    name_of(&t.name).is_empty() && !t.topic_id.is_nil()
}

impl Topics for MetadataRequest {
    type Response = MetadataResponse;
    const HANDLING: Handling = Handling::Listed;
    fn names(&self) -> Vec<&str> {
        self.topics
            .iter()
            .flatten()
            .map(|t| name_of(&t.name))
            .collect()
    }
    fn retain(&mut self, keep: &mut dyn FnMut(&str) -> bool, _others: bool) {
        if let Some(topics) = &mut self.topics {
            topics.retain(|t| keep(name_of(&t.name)));
        }
    }
    fn refuse(&self, into: &mut MetadataResponse, code: i16) {
        for t in self.topics.iter().flatten() {
            let mut out = metadata_response::MetadataResponseTopic::default();
            out.error_code = code;
            out.name = t.name.clone();
            out.topic_id = t.topic_id;
            into.topics.push(out);
        }
    }
    /// v0 names no topic to ask for all of them, so a request whose every
    /// topic is denied cannot go on naming none.
    fn answered_whole(&self, version: i16) -> bool {
        version == 0
    }
    fn lists_all(&self, version: i16) -> bool {
        match &self.topics {
            None => true,
            Some(topics) => version == 0 && topics.is_empty(),
        }
    }
    /// Named and by id: the broker may answer for the id (v12 on).
    fn invalid(&self) -> Vec<bool> {
        let topics = self.topics.iter().flatten();
        topics
            .map(|t| !name_of(&t.name).is_empty() && !t.topic_id.is_nil())
            .collect()
    }
    fn asked(&self, version: i16) -> Option<Asked> {
        let ids = self.topics.iter().flatten().filter(|t| by_id(t));
        let ids = ids.map(|t| t.topic_id);
        (!self.lists_all(version)).then(|| Asked::new(self.names(), ids))
    }
    fn judged_in_response(&self) -> Vec<bool> {
        self.topics.iter().flatten().map(by_id).collect()
    }
    /// Every named topic of the response is judged (those the request
    /// named were allowed already): a denied one keeps only its id, or is
    /// left out where a name may not be null (before v12, which names
    /// topics by id only in the request).
    fn refuse_named(
        response: &mut MetadataResponse,
        keep: &mut dyn FnMut(&str) -> bool,
        version: i16,
    ) {
        let mut denied = |t: &metadata_response::MetadataResponseTopic| {
            t.name.as_ref().is_some_and(|n| !keep(n.as_str()))
        };
        if version < NULL_NAMES {
            response.topics.retain(|t| !denied(t));
            return;
        }
        for t in &mut response.topics {
            if denied(t) {
                let mut out = metadata_response::MetadataResponseTopic::default();
                out.name = None;
                out.error_code = TOPIC_AUTHORIZATION_FAILED;
                out.topic_id = t.topic_id;
                *t = out;
            }
        }
    }
}

impl Topics for OffsetFetchRequest {
    type Response = OffsetFetchResponse;
    const HANDLING: Handling = Handling::Listed;
    fn names(&self) -> Vec<&str> {
        let single = self.topics.iter().flatten().map(|t| t.name.as_str());
        let groups = self
            .groups
            .iter()
            .flat_map(|g| g.topics.iter().flatten())
            .map(|t| t.name.as_str());
        single.chain(groups).collect()
    }
    /// A group whose named topics are all left out is left out too (an
    /// empty list could be read as every topic).
    fn retain(&mut self, keep: &mut dyn FnMut(&str) -> bool, _others: bool) {
        if let Some(topics) = &mut self.topics {
            topics.retain(|t| keep(t.name.as_str()));
        }
        self.groups.retain_mut(|g| match &mut g.topics {
            Some(topics) if !topics.is_empty() => {
                topics.retain(|t| keep(t.name.as_str()));
                !topics.is_empty()
            }
            _ => true,
        });
    }
    fn refuse(&self, into: &mut OffsetFetchResponse, code: i16) {
        for t in self.topics.iter().flatten() {
            let mut out = offset_fetch_response::OffsetFetchResponseTopic::default();
            out.name = t.name.clone();
            out.partitions = t
                .partition_indexes
                .iter()
                .map(|i| {
                    let mut p = offset_fetch_response::OffsetFetchResponsePartition::default();
                    p.partition_index = *i;
                    p.committed_offset = -1;
                    p.error_code = code;
                    p
                })
                .collect();
            into.topics.push(out);
        }
        for g in &self.groups {
            let topics: Vec<_> = g
                .topics
                .iter()
                .flatten()
                .map(|t| group_topic(t, code))
                .collect();
            if topics.is_empty() {
                continue;
            }
            match into.groups.iter_mut().find(|r| r.group_id == g.group_id) {
                Some(group) => group.topics.extend(topics),
                None => {
                    let mut group = offset_fetch_response::OffsetFetchResponseGroup::default();
                    group.group_id = g.group_id.clone();
                    group.topics = topics;
                    into.groups.push(group);
                }
            }
        }
    }
    /// The top-level error (v2 to v7), and each group's asking for every
    /// topic (v8 on).
    fn fail(&self, into: &mut OffsetFetchResponse, code: i16) {
        self.refuse(into, code);
        into.error_code = code;
        for g in self.groups.iter().filter(|g| g.topics.is_none()) {
            let mut group = offset_fetch_response::OffsetFetchResponseGroup::default();
            group.group_id = g.group_id.clone();
            group.error_code = code;
            into.groups.push(group);
        }
    }
    /// Topics null (v2 to v7: every topic of the group), or a group's
    /// topics null (v8 on).
    fn lists_all(&self, version: i16) -> bool {
        match version {
            ..8 => self.topics.is_none(),
            _ => self.groups.iter().any(|g| g.topics.is_none()),
        }
    }
}

impl Topics for DescribeTopicPartitionsRequest {
    type Response = DescribeTopicPartitionsResponse;
    const HANDLING: Handling = Handling::Listed;
    fn names(&self) -> Vec<&str> {
        self.topics.iter().map(|t| t.name.as_str()).collect()
    }
    fn retain(&mut self, keep: &mut dyn FnMut(&str) -> bool, _others: bool) {
        self.topics.retain(|t| keep(t.name.as_str()));
    }
    fn refuse(&self, into: &mut DescribeTopicPartitionsResponse, code: i16) {
        for t in &self.topics {
            let mut out =
                describe_topic_partitions_response::DescribeTopicPartitionsResponseTopic::default();
            out.name = Some(t.name.clone());
            out.error_code = code;
            into.topics.push(out);
        }
    }
    /// Kafka reads no topics as every topic.
    fn lists_all(&self, _version: i16) -> bool {
        self.topics.is_empty()
    }
}

fn group_topic(
    t: &offset_fetch_request::OffsetFetchRequestTopics,
    code: i16,
) -> offset_fetch_response::OffsetFetchResponseTopics {
    let mut out = offset_fetch_response::OffsetFetchResponseTopics::default();
    out.name = t.name.clone();
    out.topic_id = t.topic_id;
    out.partitions = t
        .partition_indexes
        .iter()
        .map(|i| {
            let mut p = offset_fetch_response::OffsetFetchResponsePartitions::default();
            p.partition_index = *i;
            p.committed_offset = -1;
            p.error_code = code;
            p
        })
        .collect();
    out
}
