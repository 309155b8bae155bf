//! The filter chain: small, independent steps that see each request before it
//! is forwarded. Adding a filter is one file in `filter/` and one line in
//! [`REGISTRY`]; its `build` validates its own config without side effects.

use std::fmt;
use std::sync::Arc;

use crate::config::read::Cx;
use crate::config::yaml::{Mark, Node};

pub mod deny_apis;

/// What a filter sees of a request: its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHead {
    /// Kafka API key (0 = Produce, 3 = Metadata, ...).
    pub api_key: i16,
    /// Version of that API the client uses.
    pub api_version: i16,
}

/// A filter's decision about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Send it on to the next filter and then upstream.
    Forward,
    /// Answer it from the proxy with this Kafka error code; the connection stays open.
    Deny {
        /// Kafka error code put in the response.
        error_code: i16,
    },
}

/// One step of the chain, built from validated configuration.
pub trait Filter: fmt::Debug + Send + Sync {
    /// Decides what happens to a request.
    fn on_request(&self, request: &RequestHead) -> Verdict;

    /// API keys whose messages this filter makes the proxy decode or encode,
    /// so their versions are capped to what the proxy supports.
    fn decoded_apis(&self) -> Vec<i16> {
        Vec::new()
    }
}

/// A configured filter: its type, the built filter, and a canonical form of
/// its configuration so two configurations can be compared.
#[derive(Clone)]
pub struct FilterSpec {
    /// The filter type, as written in `type`.
    pub kind: &'static str,
    /// The built filter.
    pub filter: Arc<dyn Filter>,
    canonical: String,
}

impl FilterSpec {
    /// Wraps a built filter; its `Debug` form is its canonical configuration.
    fn new(kind: &'static str, filter: Arc<dyn Filter>) -> Self {
        let canonical = format!("{filter:?}");
        FilterSpec {
            kind,
            filter,
            canonical,
        }
    }
}

impl PartialEq for FilterSpec {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.canonical == other.canonical
    }
}

impl fmt::Debug for FilterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical)
    }
}

/// Builds a filter from its `config` node (absent when not written),
/// recording any errors at `path`; `mark` is the filter entry's position.
pub(crate) type BuildFn = fn(&mut Cx<'_>, Option<&Node>, &str, Mark) -> Option<Arc<dyn Filter>>;

/// A filter type the configuration can name.
pub(crate) struct FilterKind {
    name: &'static str,
    build: BuildFn,
}

impl FilterKind {
    /// Validates `config` and builds the filter.
    pub(crate) fn build(
        &self,
        cx: &mut Cx<'_>,
        config: Option<&Node>,
        path: &str,
        mark: Mark,
    ) -> Option<FilterSpec> {
        (self.build)(cx, config, path, mark).map(|f| FilterSpec::new(self.name, f))
    }
}

/// Every filter type, by name.
const REGISTRY: &[FilterKind] = &[FilterKind {
    name: deny_apis::NAME,
    build: deny_apis::build,
}];

/// The filter type called `name`.
pub(crate) fn kind(name: &str) -> Option<&'static FilterKind> {
    REGISTRY.iter().find(|k| k.name == name)
}

/// Names of every filter type.
pub(crate) fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|k| k.name).collect()
}
