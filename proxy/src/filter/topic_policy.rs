//! The running `topic-policy`: which requests it must look at, and its
//! decision per topic (the rules and the decision itself live in
//! `sluice-config`'s `policy`; the per-API work in `sluice-kafka`'s).

use sluice_config::policy::{self, Decision, Operation};

/// A cluster's topic policy, as the data plane asks it.
#[derive(Debug)]
pub(crate) struct TopicPolicy {
    policy: policy::TopicPolicy,
    /// By operation: allowed on every topic to every client, whatever its
    /// id (then requests of that operation are never looked at).
    open: [bool; Operation::ALL.len()],
}

impl TopicPolicy {
    pub(crate) fn new(policy: policy::TopicPolicy) -> Self {
        let by_id = policy.rules.iter().any(|r| r.client_ids.is_some());
        let open = Operation::ALL.map(|op| !by_id && policy.allows_every_topic(op, ""));
        TopicPolicy { policy, open }
    }

    /// The operation of `api_key` when the proxy must look at its requests:
    /// `None` for APIs that name no topics, and for operations the policy
    /// allows on every topic to every client (they cost nothing).
    pub(crate) fn polices(&self, api_key: i16) -> Option<Operation> {
        let op = policy::operation_of(api_key)?;
        let at = Operation::ALL.iter().position(|o| *o == op)?;
        (!self.open[at]).then_some(op)
    }

    /// Whether `client` may do `op` on every topic: its requests of `op`
    /// need not be decoded.
    pub(crate) fn open_for(&self, op: Operation, client: &str) -> bool {
        self.policy.allows_every_topic(op, client)
    }

    /// Whether `other` surely decides `op` as this one does, on every topic
    /// for every client: the same combination and default, and the same
    /// rules covering `op`, in order (rules of other operations may
    /// differ). Policies written differently that happen to decide alike
    /// are taken as different. A Fetch session judged by one needs no
    /// judging again under the other (`dataplane::requests::sessions`).
    pub(crate) fn same_for(&self, other: &TopicPolicy, op: Operation) -> bool {
        let covering = |p: &policy::TopicPolicy| -> Vec<policy::Rule> {
            let rules = p.rules.iter().filter(|r| r.operations.contains(op));
            // Only `op` of each: a rule's other operations do not matter.
            rules
                .map(|r| policy::Rule {
                    operations: [op].into_iter().collect(),
                    ..r.clone()
                })
                .collect()
        };
        let (a, b) = (&self.policy, &other.policy);
        a.combine == b.combine && a.default == b.default && covering(a) == covering(b)
    }

    /// Whether `client` may do `op` on `topic`. A topic named by id only
    /// comes as "" (no topic has that name): refused, so it passes only
    /// where the operation is allowed on every topic ([`Self::open_for`]).
    pub(crate) fn allows(&self, op: Operation, topic: &str, client: &str) -> bool {
        self.decide(op, topic, client).allowed()
    }

    /// [`Self::allows`], with the deciding rule of a denial.
    pub(crate) fn decide(&self, op: Operation, topic: &str, client: &str) -> Decision {
        if topic.is_empty() {
            return Decision::Deny { rule: None };
        }
        self.policy.decide(op, topic, client)
    }
}

/// A request's denials by deciding rule, for `sluice_policy_denied_total`.
#[derive(Debug, Default)]
pub(crate) struct Denials(Vec<(Option<usize>, usize)>);

impl Denials {
    /// Notes one topic's decision; returns whether it was allowed.
    pub(crate) fn note(&mut self, decision: Decision) -> bool {
        if let Decision::Deny { rule } = decision {
            match self.0.iter_mut().find(|(r, _)| *r == rule) {
                Some((_, n)) => *n += 1,
                None => self.0.push((rule, 1)),
            }
        }
        decision.allowed()
    }

    /// `(rule label, topics)` for the `denied` topics of one request: the
    /// noted ones by rule, any others (a request naming every topic, judged
    /// whole) as `every-topic`.
    pub(crate) fn by_rule(self, denied: usize) -> Vec<(String, usize)> {
        let noted: usize = self.0.iter().map(|(_, n)| n).sum();
        let mut out: Vec<(String, usize)> = self
            .0
            .into_iter()
            .map(|(rule, n)| (rule.map_or("default".into(), |i| (i + 1).to_string()), n))
            .collect();
        if denied > noted {
            out.push(("every-topic".into(), denied - noted));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use sluice_config::policy::{Combine, Effect, Pattern, Rule};

    use super::*;

    fn rule(effect: Effect, ops: &[Operation], topic: &str, ids: Option<&str>) -> Rule {
        Rule {
            effect,
            operations: ops.iter().copied().collect(),
            topics: vec![Pattern::new(topic)],
            client_ids: ids.map(|i| vec![Pattern::new(i)]),
        }
    }

    #[test]
    fn only_operations_that_some_topic_or_client_is_denied_are_policed() {
        let p = TopicPolicy::new(policy::TopicPolicy {
            combine: Combine::First,
            default: Effect::Allow,
            rules: vec![rule(Effect::Deny, &[Operation::Create], "*", None)],
        });
        assert_eq!(p.polices(19), Some(Operation::Create));
        assert_eq!(p.polices(0), None, "produce is open to all");
        assert_eq!(p.polices(18), None, "ApiVersions names no topic");

        let by_client = TopicPolicy::new(policy::TopicPolicy {
            combine: Combine::First,
            default: Effect::Allow,
            rules: vec![rule(
                Effect::Deny,
                &[Operation::Produce],
                "*",
                Some("guest-*"),
            )],
        });
        assert_eq!(by_client.polices(0), Some(Operation::Produce));
        assert!(by_client.open_for(Operation::Produce, "billing"));
        assert!(!by_client.open_for(Operation::Produce, "guest-1"));
        assert!(!by_client.allows(Operation::Produce, "orders", "guest-1"));
        assert!(by_client.allows(Operation::Produce, "orders", "billing"));
        assert!(
            !by_client.allows(Operation::Produce, "", "billing"),
            "by id"
        );
    }

    #[test]
    fn denials_are_counted_by_the_rule_that_decided() {
        let policy = TopicPolicy::new(policy::TopicPolicy {
            combine: Combine::First,
            default: Effect::Deny,
            rules: vec![
                rule(Effect::Deny, &[Operation::Produce], "secret-*", None),
                rule(Effect::Allow, &[Operation::Produce], "*", Some("billing")),
            ],
        });
        let mut denials = Denials::default();
        for (topic, client) in [
            ("secret-a", "billing"),
            ("orders", "billing"),
            ("secret-b", "guest"),
            ("orders", "guest"),
        ] {
            denials.note(policy.decide(Operation::Produce, topic, client));
        }
        assert_eq!(
            denials.by_rule(4),
            [
                ("1".to_owned(), 2),
                ("default".to_owned(), 1),
                ("every-topic".to_owned(), 1)
            ]
        );
    }

    #[test]
    fn policies_differing_only_in_other_operations_decide_consume_alike() {
        let with = |rules: Vec<Rule>| {
            TopicPolicy::new(policy::TopicPolicy {
                combine: Combine::First,
                default: Effect::Allow,
                rules,
            })
        };
        let consume = |topic| rule(Effect::Deny, &[Operation::Consume], topic, None);
        let base = with(vec![consume("b*")]);
        let produce_too = with(vec![
            rule(Effect::Deny, &[Operation::Produce], "a", None),
            consume("b*"),
        ]);
        assert!(base.same_for(&produce_too, Operation::Consume));
        assert!(!base.same_for(&produce_too, Operation::Produce));
        assert!(!base.same_for(&with(vec![consume("c*")]), Operation::Consume));
        assert!(!base.same_for(&with(vec![]), Operation::Consume));
        let default_deny = TopicPolicy::new(policy::TopicPolicy {
            combine: Combine::First,
            default: Effect::Deny,
            rules: vec![consume("b*")],
        });
        assert!(!base.same_for(&default_deny, Operation::Consume));
    }
}
