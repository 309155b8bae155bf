//! `topic-policy`: which operations clients may do on which topics (see
//! [`policy`](crate::policy) for the decision). Read here with every error
//! at its position.

use super::FilterSpec;
use crate::identity::MAX_PRINCIPAL_CHARS;
use crate::policy::{Combine, Effect, Operation, Operations, Pattern, Rule, TopicPolicy};
use crate::read::{Cx, Fields, index, list, string, suggest};
use crate::yaml::{Mark, Node};

/// The type name used in the configuration.
pub(crate) const NAME: &str = "topic-policy";

/// Kafka's longest topic name.
const MAX_TOPIC_LEN: usize = 249;

pub(crate) fn build(
    cx: &mut Cx<'_>,
    config: Option<&Node>,
    path: &str,
    mark: Mark,
) -> Option<FilterSpec> {
    let Some(config) = config else {
        return cx.fail(path, mark, "required field is missing");
    };
    let f = Fields::of(cx, config, path, &["match", "default", "rules"])?;
    let combine = f.optional(cx, "match", |cx, node, path| {
        one_of(
            cx,
            node,
            path,
            &[("first", Combine::First), ("deny-wins", Combine::DenyWins)],
        )
    });
    let default = f.optional(cx, "default", |cx, node, path| {
        one_of(
            cx,
            node,
            path,
            &[("deny", Effect::Deny), ("allow", Effect::Allow)],
        )
    });
    let rules = f.required(cx, "rules", |cx, node, path| {
        let items = list(cx, node, path)?;
        let rules: Vec<Option<Rule>> = items
            .iter()
            .enumerate()
            .map(|(i, item)| rule(cx, item, &index(path, i)))
            .collect();
        rules.into_iter().collect::<Option<Vec<Rule>>>()
    });
    // Absent keys take their defaults; a wrong one has been reported.
    let combine = match (f.has("match"), combine) {
        (false, _) => Combine::default(),
        (true, c) => c?,
    };
    let default = match (f.has("default"), default) {
        (false, _) => Effect::default(),
        (true, d) => d?,
    };
    Some(FilterSpec::TopicPolicy(TopicPolicy {
        combine,
        default,
        rules: rules?,
    }))
}

fn one_of<T: Copy>(cx: &mut Cx<'_>, node: &Node, path: &str, choices: &[(&str, T)]) -> Option<T> {
    let text = string(cx, node, path)?;
    if let Some((_, v)) = choices.iter().find(|(name, _)| *name == text) {
        return Some(*v);
    }
    let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
    cx.fail(
        path,
        node.mark,
        format_args!("expected one of {}, found {text:?}", names.join(", ")),
    )
}

fn rule(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Rule> {
    let keys = ["allow", "deny", "topics", "clientIds", "principals"];
    let f = Fields::of(cx, node, path, &keys)?;
    let effect = match (f.has("allow"), f.has("deny")) {
        (true, false) => Some(Effect::Allow),
        (false, true) => Some(Effect::Deny),
        (true, true) => cx.fail(path, f.mark(), "a rule has allow or deny, not both"),
        (false, false) => cx.fail(path, f.mark(), "a rule needs allow or deny"),
    };
    let key = if effect == Some(Effect::Deny) {
        "deny"
    } else {
        "allow"
    };
    let operations = match effect {
        Some(_) => f.required(cx, key, operations),
        None => None,
    };
    let topics = match operations {
        // A rule of cluster operations judges no topic: it has no `topics`.
        Some(ops) if ops.any_cluster() => {
            if f.has("topics") {
                f.optional(cx, "topics", |cx, node, path| {
                    cx.fail(
                        path,
                        node.mark,
                        "a rule of cluster operations judges no topic: leave topics out",
                    )
                })
            } else {
                Some(Vec::new())
            }
        }
        Some(_) => f.required(cx, "topics", |cx, node, path| {
            patterns(cx, node, path, topic_pattern)
        }),
        // Wrong operations (reported): topics are checked when written.
        None => f.optional(cx, "topics", |cx, node, path| {
            patterns(cx, node, path, topic_pattern)
        }),
    };
    let client_ids = f.optional(cx, "clientIds", |cx, node, path| {
        patterns(cx, node, path, client_pattern)
    });
    let principals = f.optional(cx, "principals", |cx, node, path| {
        patterns(cx, node, path, principal_pattern)
    });
    // Both read first: each one's errors are reported.
    if f.has("clientIds") && client_ids.is_none() || f.has("principals") && principals.is_none() {
        return None;
    }
    Some(Rule {
        effect: effect?,
        operations: operations?,
        topics: topics?,
        client_ids,
        principals,
    })
}

fn operations(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<Operations> {
    let items = list(cx, node, path)?;
    if items.is_empty() {
        return cx.fail(path, node.mark, "must list at least one operation");
    }
    let mut set = Operations::default();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let at = index(path, i);
        let Some(name) = string(cx, item, &at) else {
            ok = false;
            continue;
        };
        if name == "all" {
            if items.len() > 1 {
                cx.error(
                    &at,
                    item.mark,
                    "all stands alone: it already names every topic operation",
                );
                ok = false;
            }
            set = Operations::all();
            continue;
        }
        match Operation::by_name(name) {
            Some(op) => set.insert(op),
            None => {
                let mut known: Vec<&str> = Operation::EVERY.iter().map(|o| o.name()).collect();
                known.push("all");
                let message = match suggest(name, &known) {
                    Some(close) => format!("unknown operation {name:?}, did you mean {close:?}?"),
                    None => format!(
                        "unknown operation {name:?}, expected one of: {}",
                        known.join(", ")
                    ),
                };
                cx.error(&at, item.mark, message);
                ok = false;
            }
        }
    }
    if ok && set.any_cluster() && set.any_topic() {
        return cx.fail(
            path,
            node.mark,
            "a rule names topic operations or cluster operations, not both: \
             cluster operations judge no topic",
        );
    }
    ok.then_some(set)
}

type Check = fn(&str) -> Result<(), String>;

fn patterns(cx: &mut Cx<'_>, node: &Node, path: &str, check: Check) -> Option<Vec<Pattern>> {
    let items = list(cx, node, path)?;
    if items.is_empty() {
        return cx.fail(path, node.mark, "must list at least one name or pattern");
    }
    let read: Vec<Option<Pattern>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = index(path, i);
            let text = string(cx, item, &at)?;
            let checked = check(text);
            cx.ok(&at, item.mark, checked)?;
            Some(Pattern::new(text))
        })
        .collect();
    read.into_iter().collect()
}

/// A topic name, or a glob of topic characters.
fn topic_pattern(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("a topic pattern cannot be empty".to_owned());
    }
    if text.len() > MAX_TOPIC_LEN {
        return Err(format!("longer than a topic name can be ({MAX_TOPIC_LEN})"));
    }
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '*' | '?');
    match text.chars().find(|c| !legal(*c)) {
        Some(c) => Err(format!(
            "{c:?} cannot be in a topic name (letters, digits, '.', '_', '-'; '*' and '?' make a glob)"
        )),
        None => Ok(()),
    }
}

/// A principal, or a glob of one: no longer than the proxy keeps them.
fn principal_pattern(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("a principal pattern cannot be empty".to_owned());
    }
    if text.chars().count() > MAX_PRINCIPAL_CHARS {
        return Err(format!(
            "longer than a principal can be ({MAX_PRINCIPAL_CHARS} characters)"
        ));
    }
    Ok(())
}

/// A client id, or a glob of one.
fn client_pattern(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("a client id pattern cannot be empty".to_owned());
    }
    Ok(())
}
