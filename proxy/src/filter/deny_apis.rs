//! `deny-apis`: answers the listed Kafka APIs from the proxy with
//! POLICY_VIOLATION, so e.g. `DeleteTopics` cannot reach the cluster while
//! the rest of the connection keeps working. Only APIs the proxy can answer
//! itself (see [`DENIABLE_APIS`]) can be listed.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::messages::ApiKey;

use super::{Filter, RequestHead, Verdict};
use crate::config::read::{Cx, Fields, index, list, string, suggest};
use crate::config::yaml::{Mark, Node};
use crate::kafka::deny::DENIABLE_APIS;

/// The type name used in the configuration.
pub(crate) const NAME: &str = "deny-apis";

/// Kafka's POLICY_VIOLATION: the request breaks a configured policy; clients
/// surface it and do not retry.
pub const POLICY_VIOLATION: i16 = 44;

/// Denies every request whose API key is in the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenyApis {
    apis: BTreeSet<i16>,
}

impl Filter for DenyApis {
    fn on_request(&self, request: &RequestHead) -> Verdict {
        if self.apis.contains(&request.api_key) {
            Verdict::Deny {
                error_code: POLICY_VIOLATION,
            }
        } else {
            Verdict::Forward
        }
    }

    fn decoded_apis(&self) -> Vec<i16> {
        self.apis.iter().copied().collect()
    }
}

/// The API called `name` (as Kafka names it, e.g. `DeleteTopics`). Compares
/// with the names tabled once, without formatting every API on every call
/// (which was a seventh of validating a configuration with filters).
pub fn api_by_name(name: &str) -> Option<ApiKey> {
    ApiKey::iter().find(|k| crate::kafka::api_name(*k as i16) == name)
}

/// Kafka's name for an API.
pub fn api_name(key: ApiKey) -> String {
    crate::kafka::api_name(key as i16).to_owned()
}

pub(crate) fn build(
    cx: &mut Cx<'_>,
    config: Option<&Node>,
    path: &str,
    mark: Mark,
) -> Option<Arc<dyn Filter>> {
    let Some(config) = config else {
        return cx.fail(path, mark, "required field is missing");
    };
    let f = Fields::of(cx, config, path, &["apis"])?;
    let apis = f.required(cx, "apis", |cx, node, path| {
        let items = list(cx, node, path)?;
        if items.is_empty() {
            return cx.fail(path, node.mark, "must list at least one API");
        }
        let keys: Vec<Option<i16>> = items
            .iter()
            .enumerate()
            .map(|(i, item)| api(cx, item, &index(path, i)))
            .collect();
        keys.into_iter().collect::<Option<BTreeSet<i16>>>()
    })?;
    Some(Arc::new(DenyApis { apis }))
}

fn api(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<i16> {
    let name = string(cx, node, path)?;
    match api_by_name(name) {
        Some(ApiKey::ApiVersions) => cx.fail(
            path,
            node.mark,
            "ApiVersions cannot be denied: clients need it to connect",
        ),
        Some(key) if DENIABLE_APIS.contains(&key) => Some(key as i16),
        Some(_) => {
            let names: Vec<String> = DENIABLE_APIS.iter().map(|k| api_name(*k)).collect();
            cx.fail(
                path,
                node.mark,
                format_args!(
                    "the proxy cannot answer {name} itself; deny-apis supports {}",
                    names.join(", ")
                ),
            )
        }
        None => {
            let names: Vec<String> = ApiKey::iter().map(api_name).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            match suggest(name, &names) {
                Some(close) => cx.fail(
                    path,
                    node.mark,
                    format_args!("unknown Kafka API {name:?}, did you mean {close:?}?"),
                ),
                None => cx.fail(
                    path,
                    node.mark,
                    format_args!("unknown Kafka API {name:?} (use names such as DeleteTopics)"),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denies_only_listed_apis() {
        let f = DenyApis {
            apis: [ApiKey::DeleteTopics as i16].into(),
        };
        let head = |api_key| RequestHead {
            api_key,
            api_version: 4,
        };
        assert_eq!(
            f.on_request(&head(20)),
            Verdict::Deny {
                error_code: POLICY_VIOLATION
            }
        );
        assert_eq!(f.on_request(&head(0)), Verdict::Forward);
    }

    #[test]
    fn api_names_are_kafkas() {
        assert_eq!(api_by_name("DeleteTopics"), Some(ApiKey::DeleteTopics));
        assert_eq!(api_by_name("Produce"), Some(ApiKey::Produce));
        assert_eq!(api_by_name("deleteTopics"), None);
    }
}
