//! The `topic-policy` filter's rules and its one decision, pure: which
//! operation a client may do on which topic. The configuration reads the
//! rules (`filter::topic_policy`), the proxy asks [`TopicPolicy::decide`]
//! per topic of each request it polices.
//!
//! Cluster operations (`alter-cluster`, `describe-cluster`,
//! `delete-groups`) are judged without a topic, only by the rules that name
//! them ([`TopicPolicy::decide_cluster`]).
//!
//! Client ids are whatever the client writes in its request header: a rule
//! on them sorts well-behaved clients, it does not authenticate anyone.
//! Principals are what the proxy verified (`authentication`): a rule on
//! them holds whatever the client says about itself.

mod ops;
mod pattern;
mod resources;

pub use ops::{API_OPERATIONS, Operation, Operations, api_names, operation_of};
pub use pattern::Pattern;
pub use resources::{
    API_RESOURCES, ResourceKind, names_resources, resource_api_names, resource_operation,
};

/// How rules combine when several match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Combine {
    /// The first matching rule, in order, decides.
    #[default]
    First,
    /// A matching deny rule decides, wherever it is; else a matching allow.
    DenyWins,
}

/// What a rule (or the default) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Effect {
    /// The operation goes ahead.
    Allow,
    /// The operation is refused with TOPIC_AUTHORIZATION_FAILED.
    #[default]
    Deny,
}

/// Who sends a request: the client id it wrote, and the principal the
/// proxy verified for its connection, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Client<'a> {
    /// The request header's client id ("" for none).
    pub id: &'a str,
    /// The connection's principal (`authentication`); `None`: not known.
    pub principal: Option<&'a str>,
}

impl<'a> Client<'a> {
    /// A client known only by its id.
    pub fn by_id(id: &'a str) -> Self {
        Client {
            id,
            principal: None,
        }
    }
}

/// One rule: an effect on some operations, topics, groups and
/// transactional ids, and (optionally) client ids and principals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    /// Allow or deny.
    pub effect: Effect,
    /// The operations it covers.
    pub operations: Operations,
    /// The topics it covers: at least one for topic operations; none for a
    /// rule of cluster operations (which judge no topic).
    pub topics: Vec<Pattern>,
    /// The consumer groups it covers (none: it judges no group).
    pub groups: Vec<Pattern>,
    /// The transactional ids it covers (none: it judges none).
    pub transactional_ids: Vec<Pattern>,
    /// The client ids it covers; `None`: every client.
    pub client_ids: Option<Vec<Pattern>>,
    /// The principals it covers; `None`: every client, with a principal or
    /// without. A rule with principals never covers a client without one.
    pub principals: Option<Vec<Pattern>>,
}

impl Rule {
    /// Whether the rule covers `op` for `client` (any topic).
    fn applies(&self, op: Operation, client: Client<'_>) -> bool {
        self.operations.contains(op)
            && (self.client_ids.as_ref()).is_none_or(|ids| ids.iter().any(|p| p.matches(client.id)))
            && (self.principals.as_ref()).is_none_or(|ps| {
                client
                    .principal
                    .is_some_and(|who| ps.iter().any(|p| p.matches(who)))
            })
    }

    /// Whether it covers only some clients (by id or by principal).
    pub fn names_clients(&self) -> bool {
        self.client_ids.is_some() || self.principals.is_some()
    }

    /// Whether it covers `op` on `topic` for `client`; a cluster operation
    /// is covered whatever the topic.
    fn matches(&self, op: Operation, topic: &str, client: Client<'_>) -> bool {
        self.applies(op, client)
            && (op.is_cluster() || self.topics.iter().any(|p| p.matches(topic)))
    }

    /// Whether it covers `op` on the group or transactional id `name` for
    /// `client`.
    fn matches_named(
        &self,
        op: Operation,
        kind: ResourceKind,
        name: &str,
        client: Client<'_>,
    ) -> bool {
        self.applies(op, client) && self.names(kind).iter().any(|p| p.matches(name))
    }

    /// The patterns it covers resources of `kind` by.
    pub fn names(&self, kind: ResourceKind) -> &[Pattern] {
        match kind {
            ResourceKind::Group => &self.groups,
            ResourceKind::TransactionalId => &self.transactional_ids,
        }
    }

    /// Whether it judges topics for `op` (a cluster operation judges
    /// none, and is covered whatever the topic).
    fn judges_topics(&self, op: Operation) -> bool {
        op.is_cluster() || !self.topics.is_empty()
    }

    /// Whether it covers every topic name (or judges no topic).
    fn every_topic(&self) -> bool {
        self.topics.is_empty() || self.topics.iter().any(Pattern::matches_all)
    }
}

/// A decision on one operation on one topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Allow,
    /// Refused: by the rule at this index, or by the default (`None`).
    Deny {
        /// The deciding rule's index in `rules`; `None` for the default.
        rule: Option<usize>,
    },
}

impl Decision {
    /// Whether the operation goes ahead.
    pub fn allowed(self) -> bool {
        self == Decision::Allow
    }
}

/// A cluster's topic policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicPolicy {
    /// How matching rules combine.
    pub combine: Combine,
    /// What happens when no rule matches.
    pub default: Effect,
    /// The rules, in order.
    pub rules: Vec<Rule>,
}

impl TopicPolicy {
    /// Whether `client` may do `op` on `topic`. A client without an id
    /// (null) is matched as the empty id; one without a principal, by no
    /// rule that names principals.
    pub fn decide(&self, op: Operation, topic: &str, client: Client<'_>) -> Decision {
        self.decide_by(|r| r.matches(op, topic, client))
    }

    /// Whether `client` may do `op` on the group or transactional id
    /// `name`: decided like a topic, by the rules naming that kind.
    pub fn decide_named(
        &self,
        op: Operation,
        kind: ResourceKind,
        name: &str,
        client: Client<'_>,
    ) -> Decision {
        self.decide_by(|r| r.matches_named(op, kind, name, client))
    }

    /// Whether some rule names resources of `kind`: only then does the
    /// policy judge them (and its default apply to them).
    pub fn judges(&self, kind: ResourceKind) -> bool {
        self.rules.iter().any(|r| !r.names(kind).is_empty())
    }

    /// The decision of the rules `matches` picks, combined.
    fn decide_by(&self, matches: impl Fn(&Rule) -> bool) -> Decision {
        let mut matching = self.rules.iter().enumerate().filter(|(_, r)| matches(r));
        let found = match self.combine {
            Combine::First => matching.next(),
            Combine::DenyWins => {
                let all: Vec<_> = matching.collect();
                all.iter()
                    .find(|(_, r)| r.effect == Effect::Deny)
                    .or_else(|| all.first())
                    .copied()
            }
        };
        match found {
            Some((_, r)) if r.effect == Effect::Allow => Decision::Allow,
            Some((i, _)) => Decision::Deny { rule: Some(i) },
            None if self.default == Effect::Allow => Decision::Allow,
            None => Decision::Deny { rule: None },
        }
    }

    /// Whether `client` may do the cluster operation `op` (topic
    /// operations are refused here: they need a topic).
    pub fn decide_cluster(&self, op: Operation, client: Client<'_>) -> Decision {
        if !op.is_cluster() {
            return Decision::Deny { rule: None };
        }
        self.decide(op, "", client)
    }

    /// Whether `client` may do `op` on every topic there is, so the proxy
    /// need not look at the topics at all. Exact for a known client id. A
    /// cluster operation is allowed or not, whatever the topic.
    pub fn allows_every_topic(&self, op: Operation, client: Client<'_>) -> bool {
        if op.is_cluster() {
            return self.decide_cluster(op, client).allowed();
        }
        let mut applying =
            (self.rules.iter()).filter(|r| r.judges_topics(op) && r.applies(op, client));
        match self.combine {
            // Walk in order: a deny rule first refuses some topic; an allow
            // rule over every topic first allows all of them.
            Combine::First => {
                for rule in applying {
                    match rule.effect {
                        Effect::Deny => return false,
                        Effect::Allow if rule.every_topic() => return true,
                        Effect::Allow => {}
                    }
                }
                self.default == Effect::Allow
            }
            Combine::DenyWins => {
                let rules: Vec<&Rule> = applying.by_ref().collect();
                if rules.iter().any(|r| r.effect == Effect::Deny) {
                    return false;
                }
                self.default == Effect::Allow || rules.iter().any(|r| r.every_topic())
            }
        }
    }

    /// Whether the policy allows every operation on every topic, and on
    /// the cluster, to every client, and judges no group or transactional
    /// id: it then never needs to look at a request.
    pub fn allows_everything(&self) -> bool {
        let any_client = self.rules.iter().all(|r| !r.names_clients());
        let named = ResourceKind::EVERY.iter().any(|k| self.judges(*k));
        any_client
            && !named
            && Operation::EVERY
                .iter()
                .all(|op| self.allows_every_topic(*op, Client::default()))
    }
}

#[cfg(test)]
mod tests;
