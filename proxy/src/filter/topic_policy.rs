//! The running `topic-policy`: which requests it must look at, and its
//! decision per topic and on the cluster (the rules and the decision itself
//! live in `sluice-config`'s `policy`; the per-API work in `sluice-kafka`'s
//! `policy` and `cluster`).

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use sluice_config::policy::{self, Client, Decision, Operation, ResourceKind};
use sluice_kafka::cluster::{CLUSTER_RESOURCE, refuse_cluster};
use sluice_kafka::frame::{FrameError, RequestHeader};
use sluice_kafka::policy::{Policed, TopicIds, police};
use sluice_kafka::resources;

use crate::audit::Names;

/// A cluster's topic policy, as the data plane asks it.
#[derive(Debug)]
pub(crate) struct TopicPolicy {
    policy: policy::TopicPolicy,
    /// By operation (of [`Operation::EVERY`]): allowed on every topic (or
    /// on the cluster) to every client, whatever its id and principal (then requests of
    /// that operation are never looked at).
    open: [bool; Operation::EVERY.len()],
    /// A tenant's: no operation is open to anyone ([`Self::guarding_ids`]).
    guards_ids: bool,
}

impl TopicPolicy {
    pub(crate) fn new(policy: policy::TopicPolicy) -> Self {
        let by_client = policy.rules.iter().any(policy::Rule::names_clients);
        let open = Operation::EVERY
            .map(|op| !by_client && policy.allows_every_topic(op, Client::default()));
        TopicPolicy {
            policy,
            open,
            guards_ids: false,
        }
    }

    /// The policy that allows everything to everyone: what judges
    /// administrative requests on a cluster without one, for the audit.
    pub(crate) fn open() -> Arc<TopicPolicy> {
        static OPEN: OnceLock<Arc<TopicPolicy>> = OnceLock::new();
        let open = OPEN.get_or_init(|| {
            Arc::new(TopicPolicy::new(policy::TopicPolicy {
                combine: policy::Combine::First,
                default: policy::Effect::Allow,
                rules: Vec::new(),
            }))
        });
        Arc::clone(open)
    }

    /// This policy, on a tenant's cluster: no operation is open, so every
    /// request naming topics is judged, and a topic named by an id the
    /// tenant's own Metadata did not teach (another tenant's, perhaps) is
    /// refused UNKNOWN_TOPIC_ID, never forwarded.
    pub(crate) fn guarding_ids(mut self) -> Self {
        self.open = [false; Operation::EVERY.len()];
        self.guards_ids = true;
        self
    }

    /// The policy of a tenant's cluster without one: allows everything,
    /// [guarding ids](Self::guarding_ids).
    pub(crate) fn tenant_guard() -> Arc<TopicPolicy> {
        static GUARD: OnceLock<Arc<TopicPolicy>> = OnceLock::new();
        let guard = GUARD.get_or_init(|| {
            let open = TopicPolicy::open();
            Arc::new(TopicPolicy::new(open.policy.clone()).guarding_ids())
        });
        Arc::clone(guard)
    }

    /// The operation of `api_key` when the proxy must look at its requests:
    /// `None` for APIs that name no topics and do nothing to the cluster,
    /// and for operations the policy allows on every topic (and, for the
    /// configs APIs, on the cluster) to every client (they cost nothing).
    /// A request naming groups or transactional ids the policy judges is
    /// looked at too, as the operation it does to the first of them.
    pub(crate) fn polices(&self, api_key: i16) -> Option<Operation> {
        let named = || self.named_operation(api_key);
        let Some(op) = self.topic_operation(api_key) else {
            return named();
        };
        let open = |op: Operation| {
            let at = Operation::EVERY.iter().position(|o| *o == op);
            at.is_some_and(|at| self.open[at])
        };
        let others = op.on_other_resources();
        (!open(op) || others.is_some_and(|o| !open(o)))
            .then_some(op)
            .or_else(named)
    }

    /// The operation `api_key` does to topics (or the cluster), if any. A
    /// policy that judges groups judges DeleteGroups per group, not as the
    /// cluster operation.
    fn topic_operation(&self, api_key: i16) -> Option<Operation> {
        let op = policy::operation_of(api_key)?;
        let per_group = op == Operation::DeleteGroups && self.policy.judges(ResourceKind::Group);
        (!per_group).then_some(op)
    }

    /// The operation `api_key` does to the first kind of resource it names
    /// that the policy judges.
    fn named_operation(&self, api_key: i16) -> Option<Operation> {
        (ResourceKind::EVERY.into_iter())
            .filter(|kind| self.policy.judges(*kind))
            .find_map(|kind| policy::resource_operation(api_key, kind))
    }

    /// Whether `client` may do `op` on every topic (and, for the configs
    /// APIs, to the cluster; a cluster operation, at all): its requests
    /// of `op` need not be decoded.
    pub(crate) fn open_for(&self, op: Operation, client: Client<'_>) -> bool {
        !self.guards_ids
            && self.policy.allows_every_topic(op, client)
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
        client: Client<'_>,
        denials: &mut Denials,
    ) -> Result<Policed, FrameError> {
        let (frame, header) = request;
        if let Some(refused) = self.police_named(request, client, denials)? {
            return Ok(refused);
        }
        // What names groups and no topic has been judged.
        let Some(op) = self.topic_operation(header.api_key).map(|_| op) else {
            return Ok(Policed::Forward);
        };
        // An administrative request is judged even where it is open to
        // the client: the audit names what it does.
        if self.open_for(op, client) && !op.audited() {
            return Ok(Policed::Forward);
        }
        if op.is_cluster() {
            let decision = self.policy.decide_cluster(op, client);
            if denials.note_named(op, decision, CLUSTER_RESOURCE) {
                return Ok(Policed::Forward);
            }
            let frame = refuse_cluster(frame, header)?;
            return Ok(Policed::Answer { frame, denied: 1 });
        }
        police(frame, header, ids, &mut |topic| {
            let (judged, decision) = self.judge(op, topic, client);
            denials.note_named(judged, decision, topic)
        })
    }

    /// Judges the groups and transactional ids a request names, where the
    /// policy judges them: `None` when every one is allowed (the topics
    /// are judged next), else the whole request is refused with the error
    /// of the kind refused (a transactional id's first: Kafka judges it
    /// first).
    fn police_named(
        &self,
        (frame, header): (&Bytes, &RequestHeader),
        client: Client<'_>,
        denials: &mut Denials,
    ) -> Result<Option<Policed>, FrameError> {
        let api = header.api_key;
        if self.named_operation(api).is_none() {
            return Ok(None);
        }
        let mut refused: Option<ResourceKind> = None;
        let mut denied = 0;
        for (kind, name) in resources::named(frame, header)? {
            let Some(op) = policy::resource_operation(api, kind) else {
                continue;
            };
            if !self.policy.judges(kind) {
                continue;
            }
            let decision = self.policy.decide_named(op, kind, &name, client);
            if !denials.note_named(op, decision, &format!("{}{name}", kind.prefix())) {
                denied += 1;
                if refused != Some(ResourceKind::TransactionalId) {
                    refused = Some(kind);
                }
            }
        }
        let Some(kind) = refused else {
            return Ok(None);
        };
        let frame = resources::refuse_named(frame, header, kind)?;
        Ok(Some(Policed::Answer { frame, denied }))
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
    pub(crate) fn allows(&self, op: Operation, topic: &str, client: Client<'_>) -> bool {
        self.decide(op, topic, client).allowed()
    }

    /// [`Self::allows`], with the deciding rule of a denial.
    pub(crate) fn decide(&self, op: Operation, topic: &str, client: Client<'_>) -> Decision {
        self.judge(op, topic, client).1
    }

    /// [`Self::decide`], and the operation judged: a configs API's
    /// non-topic resource (named [`CLUSTER_RESOURCE`]) is judged as the
    /// cluster operation beside `op` (`alter-cluster` beside
    /// `alter-configs`).
    fn judge(&self, op: Operation, topic: &str, client: Client<'_>) -> (Operation, Decision) {
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
/// `sluice_policy_denied_total`, and the resources it named, denied and
/// allowed, for the audit.
#[derive(Debug, Default)]
pub(crate) struct Denials {
    by_rule: Vec<(Operation, Option<usize>, usize)>,
    pub(crate) denied: Names,
    pub(crate) allowed: Names,
}

impl Denials {
    /// [`Self::note`], naming the resource judged.
    pub(crate) fn note_named(&mut self, op: Operation, decision: Decision, name: &str) -> bool {
        let allowed = self.note(op, decision);
        if allowed {
            self.allowed.push(name);
        } else {
            self.denied.push(name);
        }
        allowed
    }

    /// Notes one decision on `op` (a topic's, or the cluster's); returns
    /// whether it was allowed.
    pub(crate) fn note(&mut self, op: Operation, decision: Decision) -> bool {
        if let Decision::Deny { rule } = decision {
            match self
                .by_rule
                .iter_mut()
                .find(|(o, r, _)| (*o, *r) == (op, rule))
            {
                Some((_, _, n)) => *n += 1,
                None => self.by_rule.push((op, rule, 1)),
            }
        }
        decision.allowed()
    }

    /// `(operation, rule label, denials)` for the `denied` topics (and
    /// cluster resources) of one request of `op`: the noted ones by rule,
    /// any others (a request naming every topic, judged whole) as
    /// `every-topic`.
    pub(crate) fn by_rule(&self, op: Operation, denied: usize) -> Vec<(Operation, String, usize)> {
        let noted: usize = self.by_rule.iter().map(|(_, _, n)| n).sum();
        let label = |rule: Option<usize>| rule.map_or("default".into(), |i| (i + 1).to_string());
        let mut out: Vec<(Operation, String, usize)> = (self.by_rule.iter())
            .map(|(o, rule, n)| (*o, label(*rule), *n))
            .collect();
        if denied > noted {
            out.push((op, "every-topic".into(), denied - noted));
        }
        out
    }
}

#[cfg(test)]
mod tests;
