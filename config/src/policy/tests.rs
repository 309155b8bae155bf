//! The decision, table by table.

use super::*;
use Operation::{Consume, Create, Delete, Describe, Produce};

fn rule(effect: Effect, ops: &[Operation], topics: &[&str], ids: Option<&[&str]>) -> Rule {
    Rule {
        effect,
        operations: ops.iter().copied().collect(),
        topics: topics.iter().map(|t| Pattern::new(t)).collect(),
        client_ids: ids.map(|ids| ids.iter().map(|i| Pattern::new(i)).collect()),
        ..Rule::default()
    }
}

fn id(id: &str) -> Client<'_> {
    Client::by_id(id)
}

fn allow(ops: &[Operation], topics: &[&str]) -> Rule {
    rule(Effect::Allow, ops, topics, None)
}

fn deny(ops: &[Operation], topics: &[&str]) -> Rule {
    rule(Effect::Deny, ops, topics, None)
}

const A: Decision = Decision::Allow;
fn d(rule: Option<usize>) -> Decision {
    Decision::Deny { rule }
}

/// An allow over a prefix, then a deny inside it: first match and deny-wins
/// disagree exactly where both match.
fn overlapping(combine: Combine) -> TopicPolicy {
    TopicPolicy {
        combine,
        default: Effect::Deny,
        rules: vec![
            allow(&[Produce, Consume, Describe], &["team-a.*", "orders"]),
            deny(&[Produce], &["team-a.secret"]),
        ],
    }
}

#[test]
fn first_match_and_deny_wins() {
    let cases = [
        (Combine::First, Produce, "team-a.secret", A),
        (Combine::DenyWins, Produce, "team-a.secret", d(Some(1))),
        (Combine::First, Consume, "team-a.secret", A),
        (Combine::DenyWins, Consume, "team-a.secret", A),
        (Combine::First, Produce, "orders", A),
        (Combine::DenyWins, Produce, "orders", A),
        (Combine::First, Produce, "billing", d(None)),
        (Combine::DenyWins, Produce, "billing", d(None)),
        (Combine::First, Create, "orders", d(None)),
    ];
    for (combine, op, topic, expected) in cases {
        let got = overlapping(combine).decide(op, topic, id("any"));
        assert_eq!(got, expected, "{combine:?} {op:?} {topic}");
    }
}

#[test]
fn the_default_decides_what_no_rule_matches() {
    let mut policy = TopicPolicy {
        combine: Combine::First,
        default: Effect::Allow,
        rules: vec![deny(&[Produce], &["audit"])],
    };
    assert_eq!(policy.decide(Produce, "audit", id("c")), d(Some(0)));
    assert_eq!(policy.decide(Produce, "orders", id("c")), A);
    assert_eq!(policy.decide(Describe, "audit", id("c")), A);
    policy.default = Effect::Deny;
    assert_eq!(policy.decide(Produce, "orders", id("c")), d(None));
    assert_eq!(
        TopicPolicy::default().decide(Describe, "x", id("")),
        d(None)
    );
}

#[test]
fn client_ids_narrow_a_rule() {
    let policy = TopicPolicy {
        combine: Combine::First,
        default: Effect::Deny,
        rules: vec![
            rule(
                Effect::Allow,
                &[Produce],
                &["billing.*"],
                Some(&["billing-*"]),
            ),
            allow(&[Describe], &["*"]),
        ],
    };
    assert_eq!(policy.decide(Produce, "billing.in", id("billing-7")), A);
    assert_eq!(policy.decide(Produce, "billing.in", id("reports")), d(None));
    assert_eq!(policy.decide(Produce, "billing.in", id("")), d(None));
    assert_eq!(policy.decide(Describe, "billing.in", id("")), A);
}

#[test]
fn every_topic_is_known_without_looking_at_topics() {
    let open = TopicPolicy {
        combine: Combine::First,
        default: Effect::Deny,
        rules: vec![
            rule(Effect::Allow, &[Produce], &["*"], Some(&["trusted-*"])),
            allow(&[Describe], &["*"]),
            allow(&[Produce], &["orders"]),
        ],
    };
    assert!(open.allows_every_topic(Produce, id("trusted-1")));
    assert!(!open.allows_every_topic(Produce, id("other")));
    assert!(open.allows_every_topic(Describe, id("other")));
    assert!(!open.allows_every_topic(Consume, id("trusted-1")));
    assert!(!open.allows_everything());

    // A deny before the catch-all spoils it under first match; under
    // deny-wins a deny anywhere does.
    for combine in [Combine::First, Combine::DenyWins] {
        let p = TopicPolicy {
            combine,
            default: Effect::Allow,
            rules: vec![deny(&[Produce], &["audit"]), allow(&[Produce], &["*"])],
        };
        assert!(!p.allows_every_topic(Produce, id("c")), "{combine:?}");
        assert!(p.allows_every_topic(Consume, id("c")), "{combine:?}");
    }
    let late_deny = TopicPolicy {
        combine: Combine::First,
        default: Effect::Deny,
        rules: vec![allow(&Operation::ALL, &["*"]), deny(&[Produce], &["audit"])],
    };
    assert!(late_deny.allows_every_topic(Produce, id("c")));
    assert!(
        !late_deny.allows_everything(),
        "`all` on every topic leaves the cluster to the default"
    );
    let everything = TopicPolicy {
        combine: Combine::DenyWins,
        default: Effect::Allow,
        rules: Vec::new(),
    };
    assert!(everything.allows_everything());
}

#[test]
fn every_topic_agrees_with_decide_on_sample_topics() {
    let topics = [
        "orders",
        "team-a.x",
        "team-a.secret",
        "billing",
        "",
        "logs-01",
    ];
    for combine in [Combine::First, Combine::DenyWins] {
        let p = overlapping(combine);
        for op in Operation::ALL {
            if p.allows_every_topic(op, id("c")) {
                assert!(topics.iter().all(|t| p.decide(op, t, id("c")).allowed()));
            }
        }
    }
}

/// `default: deny`, `allow [all]` on `open.*`: the hole of issue 46.
fn topics_only(combine: Combine) -> TopicPolicy {
    TopicPolicy {
        combine,
        default: Effect::Deny,
        rules: vec![
            allow(&Operation::ALL, &["open.*"]),
            allow(&[Consume, Describe], &["ro.*"]),
        ],
    }
}

#[test]
fn cluster_operations_are_judged_only_by_rules_naming_them() {
    use Operation::{AlterCluster, DeleteGroups, DescribeCluster};
    for combine in [Combine::First, Combine::DenyWins] {
        let mut p = topics_only(combine);
        for op in Operation::CLUSTER {
            assert_eq!(p.decide_cluster(op, id("c")), d(None), "{combine:?} {op:?}");
            assert!(!p.allows_every_topic(op, id("c")));
        }
        // A catch-all of topic operations covers no cluster operation.
        p.rules.insert(0, allow(&Operation::ALL, &["*"]));
        assert_eq!(p.decide_cluster(AlterCluster, id("c")), d(None));
        assert!(!p.allows_everything());

        p.rules
            .push(rule(Effect::Allow, &[AlterCluster], &[], Some(&["ops-*"])));
        p.rules.push(allow(&[DescribeCluster], &[]));
        assert_eq!(p.decide_cluster(AlterCluster, id("ops-1")), A);
        assert_eq!(p.decide_cluster(AlterCluster, id("app")), d(None));
        assert!(p.allows_every_topic(AlterCluster, id("ops-1")));
        assert_eq!(p.decide_cluster(DescribeCluster, id("app")), A);
        assert_eq!(p.decide_cluster(DeleteGroups, id("ops-1")), d(None));
        // A topic operation is never judged as a cluster one.
        assert_eq!(p.decide_cluster(Produce, id("ops-1")), d(None));
    }

    // A deny of a cluster operation: first match takes it in order,
    // deny-wins wherever it is.
    let with = |combine| TopicPolicy {
        combine,
        default: Effect::Allow,
        rules: vec![
            allow(&[AlterCluster], &[]),
            deny(&[AlterCluster, DeleteGroups], &[]),
        ],
    };
    assert_eq!(
        with(Combine::First).decide_cluster(AlterCluster, id("c")),
        A
    );
    assert_eq!(
        with(Combine::DenyWins).decide_cluster(AlterCluster, id("c")),
        d(Some(1))
    );
    assert_eq!(
        with(Combine::First).decide_cluster(DeleteGroups, id("c")),
        d(Some(1))
    );
    assert_eq!(
        with(Combine::First).decide_cluster(DescribeCluster, id("c")),
        A
    );
    let open = TopicPolicy {
        combine: Combine::First,
        default: Effect::Allow,
        rules: Vec::new(),
    };
    assert!(
        Operation::CLUSTER
            .iter()
            .all(|op| open.decide_cluster(*op, id("c")).allowed())
    );
}

#[test]
fn principals_hold_whatever_the_client_id_says() {
    let by_principal = |principals: &[&str]| Rule {
        principals: Some(principals.iter().map(|p| Pattern::new(p)).collect()),
        ..rule(Effect::Allow, &[Produce], &["billing.*"], None)
    };
    let policy = TopicPolicy {
        combine: Combine::First,
        default: Effect::Deny,
        rules: vec![by_principal(&["billing", "svc-billing-*"])],
    };
    let who = |id, principal| Client { id, principal };
    assert_eq!(
        policy.decide(Produce, "billing.in", who("x", Some("billing"))),
        A
    );
    assert_eq!(
        policy.decide(Produce, "billing.in", who("billing", Some("svc-billing-2"))),
        A
    );
    // Another's client id gives nothing; no principal matches no such rule.
    assert_eq!(
        policy.decide(Produce, "billing.in", who("billing", Some("reports"))),
        d(None)
    );
    assert_eq!(policy.decide(Produce, "billing.in", id("billing")), d(None));
    assert!(policy.allows_every_topic(Describe, id("")) == (policy.default == Effect::Allow));
    assert!(!policy.allows_everything());

    // Both narrow: the rule covers a client only when each matches.
    let both = TopicPolicy {
        rules: vec![Rule {
            client_ids: Some(vec![Pattern::new("app-*")]),
            ..by_principal(&["billing"])
        }],
        ..policy
    };
    assert_eq!(
        both.decide(Produce, "billing.in", who("app-1", Some("billing"))),
        A
    );
    assert_eq!(
        both.decide(Produce, "billing.in", who("other", Some("billing"))),
        d(None)
    );
}

#[test]
fn groups_and_transactional_ids_are_judged_by_the_rules_naming_them() {
    use ResourceKind::{Group, TransactionalId};
    let team = |who: &str, prefix: &str| Rule {
        effect: Effect::Allow,
        operations: Operations::all(),
        topics: vec![Pattern::new(&format!("{prefix}.*"))],
        groups: vec![Pattern::new(&format!("{prefix}.*"))],
        principals: Some(vec![Pattern::new(who)]),
        ..Rule::default()
    };
    let open_topics = allow(&[Describe, Consume], &["*"]);
    let policy = TopicPolicy {
        combine: Combine::First,
        default: Effect::Deny,
        rules: vec![team("alice", "a"), team("bob", "b"), open_topics],
    };
    let who = |principal| Client {
        id: "app",
        principal: Some(principal),
    };
    assert!(policy.judges(Group) && !policy.judges(TransactionalId));
    assert_eq!(policy.decide_named(Consume, Group, "a.g", who("alice")), A);
    assert_eq!(policy.decide_named(Delete, Group, "a.g", who("alice")), A);
    // Bob may read every topic, but joins no group of Alice's: the rule
    // over every topic names no group.
    assert_eq!(
        policy.decide_named(Consume, Group, "a.g", who("bob")),
        d(None)
    );
    assert_eq!(policy.decide(Consume, "a.t", who("bob")), A);
    assert_eq!(
        policy.decide_named(Describe, Group, "other", who("alice")),
        d(None)
    );
    // A rule naming groups only judges no topic, and covers none.
    let groups_only = TopicPolicy {
        combine: Combine::First,
        default: Effect::Deny,
        rules: vec![Rule {
            effect: Effect::Allow,
            operations: [Consume].into_iter().collect(),
            groups: vec![Pattern::new("*")],
            ..Rule::default()
        }],
    };
    assert!(!groups_only.allows_every_topic(Consume, id("c")));
    assert_eq!(groups_only.decide(Consume, "t", id("c")), d(None));
    assert_eq!(groups_only.decide_named(Consume, Group, "g", id("c")), A);
    assert!(!groups_only.allows_everything());
}
