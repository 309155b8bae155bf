//! What a response to a policed request may list, whatever the broker made
//! of the request: the topics the client may see and, when the request
//! named topics, only those it named. A broker's reading of a request is
//! never trusted: tansu answers a Metadata naming no topic (Kafka: none)
//! with every topic, and a request naming a topic by name and by id acts
//! on one of them. Each response type says where its topics are
//! ([`Shown`]); Produce's and Fetch's are never filtered (they stream).

use std::collections::HashSet;

use kafka_protocol::messages::*;
use uuid::Uuid;

/// The topics a request asked for, by name and by id.
#[derive(Debug, Clone, Default)]
pub(crate) struct Asked {
    names: HashSet<String>,
    ids: HashSet<Uuid>,
}

impl Asked {
    /// The topics named `names` (empty names skipped) and ids `ids` (nil
    /// skipped).
    pub(crate) fn new<'a>(
        names: impl IntoIterator<Item = &'a str>,
        ids: impl IntoIterator<Item = Uuid>,
    ) -> Asked {
        Asked {
            names: (names.into_iter())
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect(),
            ids: ids.into_iter().filter(|id| !id.is_nil()).collect(),
        }
    }
}

/// Which of a response's topics the client sees.
#[derive(Debug)]
pub(crate) enum Listing {
    /// All of them: the response is not judged (Produce, Fetch).
    Unfiltered,
    /// Those it may see (the request asked for every topic).
    All,
    /// Those it may see of those it asked for.
    Asked(Asked),
}

impl Listing {
    /// Whether the client sees a topic listed as `name` (`None` or "":
    /// listed by id only) and `id` (nil: none), `keep` saying which names
    /// it may see. A topic listed by id only is seen when asked for by
    /// that id.
    pub(crate) fn shows(
        &self,
        name: Option<&str>,
        id: Uuid,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> bool {
        let name = name.filter(|n| !n.is_empty());
        match self {
            Listing::Unfiltered => true,
            Listing::All => name.is_some_and(keep),
            Listing::Asked(asked) => {
                let named = name.is_some_and(|n| asked.names.contains(n));
                let by_id = !id.is_nil() && asked.ids.contains(&id);
                (named || by_id) && name.is_none_or(keep)
            }
        }
    }
}

/// A response's topics, as [`Listing`] judges them.
pub(crate) trait Shown {
    /// Whether the response is judged at all (not Produce's and Fetch's).
    const FILTERED: bool = true;
    /// Keeps the entries `shows(name, id)` allows; what names no topic
    /// stays.
    fn retain_shown(&mut self, shows: &mut dyn FnMut(Option<&str>, Uuid) -> bool);
}

/// Responses whose topics are a list of entries with a name (and an id).
macro_rules! shown {
    (@name $e:expr) => { Some($e.as_str()) };
    (@name $e:expr, opt) => { $e.as_ref().map(|n| n.as_str()) };
    (@id $t:ident) => { Uuid::nil() };
    (@id $t:ident, $id:ident) => { $t.$id };
    ($($resp:ty: $topics:ident[$name:ident $(, $id:ident)?] $(as $opt:ident)?;)*) => {$(
        impl Shown for $resp {
            fn retain_shown(&mut self, shows: &mut dyn FnMut(Option<&str>, Uuid) -> bool) {
                self.$topics
                    .retain(|t| shows(shown!(@name t.$name $(, $opt)?), shown!(@id t $(, $id)?)));
            }
        }
    )*};
}

shown! {
    ListOffsetsResponse: topics[name];
    OffsetCommitResponse: topics[name, topic_id];
    TxnOffsetCommitResponse: topics[name];
    OffsetDeleteResponse: topics[name];
    OffsetForLeaderEpochResponse: topics[topic];
    DeleteRecordsResponse: topics[name];
    DescribeProducersResponse: topics[name];
    AlterPartitionReassignmentsResponse: responses[name];
    CreateTopicsResponse: topics[name, topic_id];
    CreatePartitionsResponse: results[name];
    DeleteTopicsResponse: responses[name, topic_id] as opt;
    MetadataResponse: topics[name, topic_id] as opt;
}

/// Kafka's TOPIC resource type in the configs APIs.
const TOPIC_RESOURCE: i8 = 2;

/// The configs APIs' results: only their TOPIC resources are judged.
macro_rules! configs {
    ($($resp:ty: $results:ident;)*) => {$(
        impl Shown for $resp {
            fn retain_shown(&mut self, shows: &mut dyn FnMut(Option<&str>, Uuid) -> bool) {
                self.$results.retain(|r| {
                    r.resource_type != TOPIC_RESOURCE
                        || shows(Some(r.resource_name.as_str()), Uuid::nil())
                });
            }
        }
    )*};
}

configs! {
    DescribeConfigsResponse: results;
    AlterConfigsResponse: responses;
    IncrementalAlterConfigsResponse: responses;
}

impl Shown for DescribeTopicPartitionsResponse {
    /// A next cursor naming a topic the client may not see is dropped
    /// (the listing ends there): it would give the name away.
    fn retain_shown(&mut self, shows: &mut dyn FnMut(Option<&str>, Uuid) -> bool) {
        self.topics
            .retain(|t| shows(t.name.as_ref().map(|n| n.as_str()), t.topic_id));
        if let Some(cursor) = &self.next_cursor
            && !shows(Some(cursor.topic_name.as_str()), Uuid::nil())
        {
            self.next_cursor = None;
        }
    }
}

impl Shown for OffsetFetchResponse {
    fn retain_shown(&mut self, shows: &mut dyn FnMut(Option<&str>, Uuid) -> bool) {
        self.topics
            .retain(|t| shows(Some(t.name.as_str()), Uuid::nil()));
        for g in &mut self.groups {
            g.topics
                .retain(|t| shows(Some(t.name.as_str()), t.topic_id));
        }
    }
}

impl Shown for AddPartitionsToTxnResponse {
    fn retain_shown(&mut self, shows: &mut dyn FnMut(Option<&str>, Uuid) -> bool) {
        let mut keep = |name: &TopicName| shows(Some(name.as_str()), Uuid::nil());
        self.results_by_topic_v3_and_below.retain(|t| keep(&t.name));
        for x in &mut self.results_by_transaction {
            x.topic_results.retain(|t| keep(&t.name));
        }
    }
}

/// Responses never judged: Produce's and Fetch's stream; the others
/// answer APIs refused whole unless allowed on every topic.
macro_rules! unfiltered {
    ($($resp:ty),* $(,)?) => {$(
        impl Shown for $resp {
            const FILTERED: bool = false;
            fn retain_shown(&mut self, _: &mut dyn FnMut(Option<&str>, Uuid) -> bool) {}
        }
    )*};
}

unfiltered!(
    ProduceResponse,
    FetchResponse,
    WriteTxnMarkersResponse,
    AlterReplicaLogDirsResponse,
    DescribeLogDirsResponse,
    ElectLeadersResponse,
    ListPartitionReassignmentsResponse,
    ShareFetchResponse,
    ShareAcknowledgeResponse,
    DescribeShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponse,
);
