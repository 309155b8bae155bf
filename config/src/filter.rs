//! Filter specifications: which filters a cluster names, each validated from
//! its `config` without side effects. The proxy builds the running filters
//! from these specs; the validator never needs the data plane.
//!
//! Adding a filter type is a variant of [`FilterSpec`], one file here that
//! reads its configuration, one line in [`REGISTRY`], and its behaviour in
//! `sluice-proxy`'s `filter` module.

use std::collections::BTreeSet;

use crate::read::Cx;
use crate::yaml::{Mark, Node};

pub mod deny_apis;
pub mod quota;
pub(crate) mod topic_policy;

pub use quota::{ByteRates, QuotaSpec};

use crate::policy::{self, TopicPolicy};

/// A configured filter, compared by value: two configurations that name the
/// same filters with the same settings have equal specs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterSpec {
    /// `deny-apis`: answer these API keys with POLICY_VIOLATION.
    DenyApis {
        /// The denied API keys.
        apis: BTreeSet<i16>,
    },
    /// `topic-policy`: who may do what on which topic.
    TopicPolicy(TopicPolicy),
    /// `quota`: byte and connection rates, enforced by throttling.
    Quota(QuotaSpec),
}

impl FilterSpec {
    /// The filter type, as written in `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            FilterSpec::DenyApis { .. } => deny_apis::NAME,
            FilterSpec::TopicPolicy(_) => topic_policy::NAME,
            FilterSpec::Quota(_) => quota::NAME,
        }
    }

    /// API keys whose messages this filter makes the proxy decode or encode,
    /// so their versions are capped to what the proxy supports.
    pub fn decoded_apis(&self) -> Vec<i16> {
        match self {
            FilterSpec::DenyApis { apis } => apis.iter().copied().collect(),
            FilterSpec::TopicPolicy(p) => {
                let topics = policy::API_OPERATIONS.iter().map(|(k, _)| *k);
                let named = (policy::API_RESOURCES.iter())
                    .filter(|(_, kind, _)| p.judges(*kind))
                    .map(|(k, _, _)| *k);
                let mut keys: Vec<i16> = topics.chain(named).collect();
                keys.sort_unstable();
                keys.dedup();
                keys
            }
            // A throttled Produce response is decoded to set its throttle time.
            FilterSpec::Quota(_) => vec![0],
        }
    }
}

/// Reads a filter's `config` node (absent when not written), recording any
/// errors at `path`; `mark` is the filter entry's position.
pub(crate) type BuildFn = fn(&mut Cx<'_>, Option<&Node>, &str, Mark) -> Option<FilterSpec>;

/// A filter type the configuration can name.
pub(crate) struct FilterKind {
    name: &'static str,
    build: BuildFn,
    /// At most one filter of this type per cluster.
    single: bool,
}

impl FilterKind {
    /// Validates `config` and returns the spec.
    pub(crate) fn build(
        &self,
        cx: &mut Cx<'_>,
        config: Option<&Node>,
        path: &str,
        mark: Mark,
    ) -> Option<FilterSpec> {
        (self.build)(cx, config, path, mark)
    }

    /// Its name, as written in `type`.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// Whether a cluster may name it at most once.
    pub(crate) fn single(&self) -> bool {
        self.single
    }
}

/// Every filter type, by name.
const REGISTRY: &[FilterKind] = &[
    FilterKind {
        name: deny_apis::NAME,
        build: deny_apis::build,
        single: false,
    },
    FilterKind {
        name: topic_policy::NAME,
        build: topic_policy::build,
        single: true,
    },
    FilterKind {
        name: quota::NAME,
        build: quota::build,
        single: true,
    },
];

/// The filter type called `name`.
pub(crate) fn kind(name: &str) -> Option<&'static FilterKind> {
    REGISTRY.iter().find(|k| k.name == name)
}

/// Names of every filter type.
pub(crate) fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|k| k.name).collect()
}
