//! The running `topic-policy`: which requests it must look at, and its
//! decision per topic and on the cluster (the rules and the decision itself
//! live in `sluice-config`'s `policy`; the per-API work in `sluice-kafka`'s
//! `policy` and `cluster`).

use bytes::Bytes;
use sluice_config::policy::{self, Decision, Operation};
use sluice_kafka::cluster::{CLUSTER_RESOURCE, refuse_cluster};
use sluice_kafka::frame::{FrameError, RequestHeader};
use sluice_kafka::policy::{Policed, TopicIds, police};

/// A cluster's topic policy, as the data plane asks it.
#[derive(Debug)]
pub(crate) struct TopicPolicy {
    policy: policy::TopicPolicy,
    /// By operation (of [`Operation::EVERY`]): allowed on every topic (or
    /// on the cluster) to every client, whatever its id (then requests of
    /// that operation are never looked at).
    open: [bool; Operation::EVERY.len()],
}

impl TopicPolicy {
    pub(crate) fn new(policy: policy::TopicPolicy) -> Self {
        let by_id = policy.rules.iter().any(|r| r.client_ids.is_some());
        let open = Operation::EVERY.map(|op| !by_id && policy.allows_every_topic(op, ""));
        TopicPolicy { policy, open }
    }

    /// The operation of `api_key` when the proxy must look at its requests:
    /// `None` for APIs that name no topics and do nothing to the cluster,
    /// and for operations the policy allows on every topic (and, for the
    /// configs APIs, on the cluster) to every client (they cost nothing).
    pub(crate) fn polices(&self, api_key: i16) -> Option<Operation> {
        let op = policy::operation_of(api_key)?;
        let open = |op: Operation| {
            let at = Operation::EVERY.iter().position(|o| *o == op);
            at.is_some_and(|at| self.open[at])
        };
        let others = op.on_other_resources();
        (!open(op) || others.is_some_and(|o| !open(o))).then_some(op)
    }

    /// Whether `client` may do `op` on every topic (and, for the configs
    /// APIs, to the cluster; a cluster operation, at all): its requests
    /// of `op` need not be decoded.
    pub(crate) fn open_for(&self, op: Operation, client: &str) -> bool {
        self.policy.allows_every_topic(op, client)
            && (op.on_other_resources()).is_none_or(|o| self.policy.allows_every_topic(o, client))
    }

    /// What becomes of a request of `op` (`frame`, prefix included, to
    /// `header`) from `client`, its denials noted in `denials`: a cluster
    /// operation goes on or is answered whole (`sluice_kafka::cluster`);
    /// the others are judged per topic, and the configs APIs' non-topic
    /// resources as the cluster.
    pub(crate) fn police(
        &self,
        request: (&Bytes, &RequestHeader),
        ids: &TopicIds,
        op: Operation,
        client: &str,
        denials: &mut Denials,
    ) -> Result<Policed, FrameError> {
        let (frame, header) = request;
        if self.open_for(op, client) {
            return Ok(Policed::Forward);
        }
        if op.is_cluster() {
            if denials.note(op, self.policy.decide_cluster(op, client)) {
                return Ok(Policed::Forward);
            }
            let frame = refuse_cluster(frame, header)?;
            return Ok(Policed::Answer { frame, denied: 1 });
        }
        police(frame, header, ids, &mut |topic| {
            let (judged, decision) = self.judge(op, topic, client);
            denials.note(judged, decision)
        })
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
        self.judge(op, topic, client).1
    }

    /// [`Self::decide`], and the operation judged: a configs API's
    /// non-topic resource (named [`CLUSTER_RESOURCE`]) is judged as the
    /// cluster operation beside `op` (`alter-cluster` beside
    /// `alter-configs`).
    fn judge(&self, op: Operation, topic: &str, client: &str) -> (Operation, Decision) {
        if topic == CLUSTER_RESOURCE
            && let Some(cluster) = op.on_other_resources()
        {
            return (cluster, self.policy.decide_cluster(cluster, client));
        }
        if topic.is_empty() || topic == CLUSTER_RESOURCE {
            return (op, Decision::Deny { rule: None });
        }
        (op, self.policy.decide(op, topic, client))
    }
}

/// A request's denials by operation and deciding rule, for
/// `sluice_policy_denied_total`.
#[derive(Debug, Default)]
pub(crate) struct Denials(Vec<(Operation, Option<usize>, usize)>);

impl Denials {
    /// Notes one decision on `op` (a topic's, or the cluster's); returns
    /// whether it was allowed.
    pub(crate) fn note(&mut self, op: Operation, decision: Decision) -> bool {
        if let Decision::Deny { rule } = decision {
            match self.0.iter_mut().find(|(o, r, _)| (*o, *r) == (op, rule)) {
                Some((_, _, n)) => *n += 1,
                None => self.0.push((op, rule, 1)),
            }
        }
        decision.allowed()
    }

    /// `(operation, rule label, denials)` for the `denied` topics (and
    /// cluster resources) of one request of `op`: the noted ones by rule,
    /// any others (a request naming every topic, judged whole) as
    /// `every-topic`.
    pub(crate) fn by_rule(self, op: Operation, denied: usize) -> Vec<(Operation, String, usize)> {
        let noted: usize = self.0.iter().map(|(_, _, n)| n).sum();
        let label = |rule: Option<usize>| rule.map_or("default".into(), |i| (i + 1).to_string());
        let mut out: Vec<(Operation, String, usize)> = (self.0.into_iter())
            .map(|(o, rule, n)| (o, label(rule), n))
            .collect();
        if denied > noted {
            out.push((op, "every-topic".into(), denied - noted));
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
            denials.note(
                Operation::Produce,
                policy.decide(Operation::Produce, topic, client),
            );
        }
        let p = Operation::Produce;
        assert_eq!(
            denials.by_rule(p, 4),
            [
                (p, "1".to_owned(), 2),
                (p, "default".to_owned(), 1),
                (p, "every-topic".to_owned(), 1)
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

    /// `default: deny`, every topic operation on `open.*`: issue 46's hole.
    fn topics_only(rules: Vec<Rule>) -> TopicPolicy {
        let mut all = vec![rule(Effect::Allow, &Operation::ALL, "open.*", None)];
        all.extend(rules);
        TopicPolicy::new(policy::TopicPolicy {
            combine: Combine::First,
            default: Effect::Deny,
            rules: all,
        })
    }

    fn cluster_rule(effect: Effect, ops: &[Operation], ids: Option<&str>) -> Rule {
        Rule {
            topics: Vec::new(),
            ..rule(effect, ops, "*", ids)
        }
    }

    #[test]
    fn the_cluster_is_policed_unless_a_rule_opens_it() {
        let p = topics_only(Vec::new());
        assert_eq!(p.polices(42), Some(Operation::DeleteGroups));
        assert_eq!(p.polices(30), Some(Operation::AlterCluster), "CreateAcls");
        assert_eq!(p.polices(60), None, "DescribeCluster stays open");
        assert_eq!(p.polices(44), Some(Operation::AlterConfigs));
        let (op, decision) = p.judge(Operation::AlterConfigs, CLUSTER_RESOURCE, "c");
        assert_eq!(
            (op, decision),
            (Operation::AlterCluster, Decision::Deny { rule: None })
        );
        assert!(p.allows(Operation::AlterConfigs, "open.a", "c"));

        // Topics all open, the cluster not: the configs APIs are policed.
        let open_topics = TopicPolicy::new(policy::TopicPolicy {
            combine: Combine::First,
            default: Effect::Deny,
            rules: vec![rule(Effect::Allow, &Operation::ALL, "*", None)],
        });
        assert_eq!(open_topics.polices(44), Some(Operation::AlterConfigs));
        assert!(!open_topics.open_for(Operation::AlterConfigs, "c"));
        assert_eq!(open_topics.polices(0), None);
        let cluster_open = TopicPolicy::new(policy::TopicPolicy {
            combine: Combine::First,
            default: Effect::Deny,
            rules: vec![
                rule(Effect::Allow, &Operation::ALL, "*", None),
                cluster_rule(Effect::Allow, &Operation::CLUSTER, None),
            ],
        });
        assert_eq!(cluster_open.polices(44), None, "nothing to look at");
        assert_eq!(cluster_open.polices(42), None);

        let ops = topics_only(vec![
            cluster_rule(Effect::Allow, &[Operation::AlterCluster], Some("ops-*")),
            cluster_rule(Effect::Allow, &[Operation::DeleteGroups], None),
        ]);
        assert!(ops.open_for(Operation::DeleteGroups, "app"), "open to all");
        assert_eq!(ops.polices(30), Some(Operation::AlterCluster));
        assert!(ops.open_for(Operation::AlterCluster, "ops-1"));
        assert!(!ops.open_for(Operation::AlterCluster, "app"));
        assert!(ops.allows(Operation::AlterConfigs, CLUSTER_RESOURCE, "ops-1"));
    }

    #[test]
    fn a_refused_cluster_operation_is_answered_and_counted_as_itself() {
        use kafka_protocol::messages::{ApiKey, DeleteGroupsRequest, GroupId};
        use kafka_protocol::protocol::StrBytes;

        let mut request = DeleteGroupsRequest::default();
        request.groups_names = vec![GroupId(StrBytes::from_static_str("g"))];
        let frame =
            sluice_kafka::encode::request(ApiKey::DeleteGroups, 2, 5, "app", &request).unwrap();
        let header = sluice_kafka::frame::request_header(&frame).unwrap();
        let ids = TopicIds::default();
        let op = Operation::DeleteGroups;

        let mut denials = Denials::default();
        let refused = topics_only(Vec::new())
            .police((&frame, &header), &ids, op, "app", &mut denials)
            .unwrap();
        assert!(
            matches!(refused, Policed::Answer { denied: 1, .. }),
            "{refused:?}"
        );
        assert_eq!(denials.by_rule(op, 1), [(op, "default".to_owned(), 1)]);

        let allowed = topics_only(vec![cluster_rule(Effect::Allow, &[op], Some("app"))]);
        let mut denials = Denials::default();
        let policed = allowed
            .police((&frame, &header), &ids, op, "app", &mut denials)
            .unwrap();
        assert!(matches!(policed, Policed::Forward), "{policed:?}");
        assert!(denials.by_rule(op, 0).is_empty());
    }
}
