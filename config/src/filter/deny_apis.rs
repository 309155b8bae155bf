//! `deny-apis`: the listed Kafka APIs are answered by the proxy with
//! POLICY_VIOLATION. Only APIs the proxy can answer itself (those the
//! [`apis`](crate::apis) table marks deniable) can be listed.

use std::collections::BTreeSet;

use super::FilterSpec;
use crate::apis;
use crate::read::{Cx, Fields, index, list, string, suggest};
use crate::yaml::{Mark, Node};

/// The type name used in the configuration.
pub(crate) const NAME: &str = "deny-apis";

pub(crate) fn build(
    cx: &mut Cx<'_>,
    config: Option<&Node>,
    path: &str,
    mark: Mark,
) -> Option<FilterSpec> {
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
    Some(FilterSpec::DenyApis { apis })
}

fn api(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<i16> {
    let name = string(cx, node, path)?;
    match apis::by_name(name) {
        Some(api) if api.name == "ApiVersions" => cx.fail(
            path,
            node.mark,
            "ApiVersions cannot be denied: clients need it to connect",
        ),
        Some(api) if api.deniable() => Some(api.key),
        Some(_) => {
            let names: Vec<&str> = apis::deniable().map(|a| a.name).collect();
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
            let names: Vec<&str> = apis::KAFKA_APIS.iter().map(|a| a.name).collect();
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
