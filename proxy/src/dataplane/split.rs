//! What the response to a request a topic policy split is merged with: the
//! data an in-flight slot carries (`direction::Answer::Merged`); the relay
//! that merges is in `merged`.

use std::fmt;
use std::sync::Arc;

use sluice_config::policy::Operation;
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::policy::Merge;

use crate::filter::topic_policy::TopicPolicy;

/// What a split request's response is merged with, and the policy it was
/// judged by (listed topics in the response are judged by it too: the one
/// the request took, whatever a reload put in force since).
pub(crate) struct Merged {
    pub(super) header: RequestHeader,
    pub(super) merge: Merge,
    pub(super) policy: Arc<TopicPolicy>,
    pub(super) op: Operation,
    pub(super) client: String,
    pub(super) principal: Option<Arc<str>>,
}

impl fmt::Debug for Merged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Merged({:?}, {:?})", self.header, self.merge)
    }
}

impl Merged {
    pub(super) fn new(
        header: RequestHeader,
        merge: Merge,
        policy: Arc<TopicPolicy>,
        op: Operation,
        (client, principal): (String, Option<Arc<str>>),
    ) -> Self {
        Merged {
            header,
            merge,
            policy,
            op,
            client,
            principal,
        }
    }
}
