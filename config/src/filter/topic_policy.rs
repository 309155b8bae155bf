//! `topic-policy`: which operations clients may do on which topics (see
//! [`policy`](crate::policy) for the decision). Read here with every error
//! at its position.

use super::FilterSpec;
use crate::identity::MAX_PRINCIPAL_CHARS;
use crate::policy::{
    Combine, Effect, Operation, Operations, Pattern, ResourceKind, Rule, TopicPolicy,
};
use crate::read::{Cx, Fields, index, join, list, string, suggest};
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
        let rules = rules.into_iter().collect::<Option<Vec<Rule>>>()?;
        let judged = rules.iter().any(|r| !r.groups.is_empty());
        let cluster = (rules.iter()).position(|r| r.operations.contains(Operation::DeleteGroups));
        if let (true, Some(i)) = (judged, cluster) {
            return cx.fail(
                &index(path, i),
                items[i].mark,
                "with rules on groups, DeleteGroups is judged per group: \
                 write delete with groups instead of delete-groups",
            );
        }
        Some(rules)
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
    let keys = [
        "allow",
        "deny",
        "topics",
        "groups",
        "transactionalIds",
        "clientIds",
        "principals",
    ];
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
    let named = resources(cx, &f, operations.map(|ops| (ops, key)));
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
    let (topics, groups, transactional_ids) = named?;
    Some(Rule {
        effect: effect?,
        operations: operations?,
        topics,
        groups,
        transactional_ids,
        client_ids,
        principals,
    })
}

/// A rule's topics, groups and transactional ids, each read when written
/// (every error reported); checked against its operations (`ops`, under
/// `key`) when they were read: a rule of cluster operations names none, a
/// rule of the others at least one kind, and each of its operations is
/// done to some kind it names.
fn resources(
    cx: &mut Cx<'_>,
    f: &Fields<'_>,
    ops: Option<(Operations, &str)>,
) -> Option<(Vec<Pattern>, Vec<Pattern>, Vec<Pattern>)> {
    let mut read = |key: &str, check: Check| {
        let read = f.optional(cx, key, |cx, node, path| patterns(cx, node, path, check));
        match (f.has(key), read) {
            (false, _) => Some(Vec::new()),
            (true, read) => read,
        }
    };
    // Where a key's value is, for errors about it.
    let at = |cx: &mut Cx<'_>, key: &str| {
        f.optional(cx, key, |_, node, _| Some(node.mark))
            .unwrap_or(f.mark())
    };
    let topics = read("topics", topic_pattern);
    let groups = read("groups", named_pattern);
    let txn = read("transactionalIds", named_pattern);
    let (topics, groups, txn) = (topics?, groups?, txn?);
    let (ops, key) = ops?;
    let written: Vec<&str> = [
        ("topics", &topics),
        (ResourceKind::Group.key(), &groups),
        (ResourceKind::TransactionalId.key(), &txn),
    ]
    .iter()
    .filter(|(_, names)| !names.is_empty())
    .map(|(key, _)| *key)
    .collect();
    let path = f.path();
    if ops.any_cluster() {
        if let Some(first) = written.first() {
            let message = format!(
                "a rule of cluster operations judges no topic, group or transactional id: \
                 leave {first} out"
            );
            let mark = at(cx, first);
            return cx.fail(&join(path, first), mark, message);
        }
    } else if written.is_empty() {
        return cx.fail(
            path,
            f.mark(),
            "a rule names the topics, groups or transactionalIds it covers",
        );
    } else if topics.is_empty() {
        let kinds: Vec<ResourceKind> = (ResourceKind::EVERY.into_iter())
            .filter(|k| written.contains(&k.key()))
            .collect();
        let done = |op: &Operation| kinds.iter().any(|k| k.operations().contains(op));
        if let Some(op) = Operation::ALL
            .iter()
            .find(|op| ops.contains(**op) && !done(op))
        {
            let to: Vec<String> = kinds.iter().map(|k| done_to(*k)).collect();
            let message = format!(
                "{} is not done to {} (name topics, or {})",
                op.name(),
                written.join(" or "),
                to.join("; ")
            );
            let mark = at(cx, key);
            return cx.fail(&join(path, key), mark, message);
        }
    }
    Some((topics, groups, txn))
}

/// What is done to a kind, for errors: "groups take consume, describe, delete".
fn done_to(kind: ResourceKind) -> String {
    let ops: Vec<&str> = kind.operations().iter().map(|o| o.name()).collect();
    format!("{} take {}", kind.key(), ops.join(", "))
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

/// A group or transactional id, or a glob of one.
fn named_pattern(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("a group or transactional id pattern cannot be empty".to_owned());
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
