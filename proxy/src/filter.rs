//! The filter chain: small, independent steps that see each request before it
//! is forwarded. Their specifications (and validation) live in
//! `sluice-config`; this module gives each spec its behaviour.

use std::fmt;
use std::sync::Arc;

use sluice_config::filter::FilterSpec;

mod deny_apis;
pub(crate) mod topic_policy;

/// What a filter sees of a request: its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestHead {
    /// Kafka API key (0 = Produce, 3 = Metadata, ...).
    pub(crate) api_key: i16,
    /// Version of that API the client uses.
    pub(crate) api_version: i16,
}

/// A filter's decision about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Send it on to the next filter and then upstream.
    Forward,
    /// Answer it from the proxy with this Kafka error code; the connection stays open.
    Deny {
        /// Kafka error code put in the response.
        error_code: i16,
    },
}

/// One step of the chain, built from a validated spec.
pub(crate) trait Filter: fmt::Debug + Send + Sync {
    /// Decides what happens to a request.
    fn on_request(&self, request: &RequestHead) -> Verdict;
}

/// The running header filter for a spec; `None` for a filter that is not
/// one (the topic policy and the quota have their own places in the chain).
pub(crate) fn build(spec: &FilterSpec) -> Option<Arc<dyn Filter>> {
    match spec {
        FilterSpec::DenyApis { apis } => Some(Arc::new(deny_apis::DenyApis::new(apis.clone()))),
        FilterSpec::TopicPolicy(_) | FilterSpec::Quota(_) => None,
    }
}
