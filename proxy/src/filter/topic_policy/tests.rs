//! The running policy's own decisions: what it looks at, denials by rule,
//! cluster operations.

use sluice_config::policy::{Combine, Effect, Pattern, Rule};

use super::*;

fn rule(effect: Effect, ops: &[Operation], topic: &str, ids: Option<&str>) -> Rule {
    Rule {
        effect,
        operations: ops.iter().copied().collect(),
        topics: vec![Pattern::new(topic)],
        client_ids: ids.map(|i| vec![Pattern::new(i)]),
        ..Rule::default()
    }
}

fn id(id: &str) -> Client<'_> {
    Client::by_id(id)
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
    assert!(by_client.open_for(Operation::Produce, id("billing")));
    assert!(!by_client.open_for(Operation::Produce, id("guest-1")));
    assert!(!by_client.allows(Operation::Produce, "orders", id("guest-1")));
    assert!(by_client.allows(Operation::Produce, "orders", id("billing")));
    assert!(
        !by_client.allows(Operation::Produce, "", id("billing")),
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
            policy.decide(Operation::Produce, topic, id(client)),
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
    let (op, decision) = p.judge(Operation::AlterConfigs, CLUSTER_RESOURCE, id("c"));
    assert_eq!(
        (op, decision),
        (Operation::AlterCluster, Decision::Deny { rule: None })
    );
    assert!(p.allows(Operation::AlterConfigs, "open.a", id("c")));

    // Topics all open, the cluster not: the configs APIs are policed.
    let open_topics = TopicPolicy::new(policy::TopicPolicy {
        combine: Combine::First,
        default: Effect::Deny,
        rules: vec![rule(Effect::Allow, &Operation::ALL, "*", None)],
    });
    assert_eq!(open_topics.polices(44), Some(Operation::AlterConfigs));
    assert!(!open_topics.open_for(Operation::AlterConfigs, id("c")));
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
    assert!(
        ops.open_for(Operation::DeleteGroups, id("app")),
        "open to all"
    );
    assert_eq!(ops.polices(30), Some(Operation::AlterCluster));
    assert!(ops.open_for(Operation::AlterCluster, id("ops-1")));
    assert!(!ops.open_for(Operation::AlterCluster, id("app")));
    assert!(ops.allows(Operation::AlterConfigs, CLUSTER_RESOURCE, id("ops-1")));
}

#[test]
fn a_refused_cluster_operation_is_answered_and_counted_as_itself() {
    use kafka_protocol::messages::{ApiKey, DeleteGroupsRequest, GroupId};
    use kafka_protocol::protocol::StrBytes;

    let mut request = DeleteGroupsRequest::default();
    request.groups_names = vec![GroupId(StrBytes::from_static_str("g"))];
    let frame = sluice_kafka::encode::request(ApiKey::DeleteGroups, 2, 5, "app", &request).unwrap();
    let header = sluice_kafka::frame::request_header(&frame).unwrap();
    let ids = TopicIds::default();
    let op = Operation::DeleteGroups;

    let mut denials = Denials::default();
    let refused = topics_only(Vec::new())
        .police((&frame, &header), &ids, op, id("app"), &mut denials)
        .unwrap();
    assert!(
        matches!(refused, Policed::Answer { denied: 1, .. }),
        "{refused:?}"
    );
    assert_eq!(denials.by_rule(op, 1), [(op, "default".to_owned(), 1)]);

    let allowed = topics_only(vec![cluster_rule(Effect::Allow, &[op], Some("app"))]);
    let mut denials = Denials::default();
    let policed = allowed
        .police((&frame, &header), &ids, op, id("app"), &mut denials)
        .unwrap();
    assert!(matches!(policed, Policed::Forward), "{policed:?}");
    assert!(denials.by_rule(op, 0).is_empty());
}

/// Team A's groups, by principal: joins and deletes of them by anyone else
/// are refused whole; a policy with no rule on groups never looks.
#[test]
fn groups_are_judged_per_principal_where_rules_name_them() {
    use kafka_protocol::messages::{ApiKey, DeleteGroupsRequest, GroupId, JoinGroupRequest};
    use kafka_protocol::protocol::StrBytes;

    let team_a = Rule {
        groups: vec![Pattern::new("a.*")],
        principals: Some(vec![Pattern::new("alice")]),
        ..rule(
            Effect::Allow,
            &[Operation::Consume, Operation::Delete],
            "a.*",
            None,
        )
    };
    let p = topics_only(vec![team_a]);
    assert_eq!(p.polices(11), Some(Operation::Consume), "JoinGroup");
    assert_eq!(p.polices(42), Some(Operation::Delete), "per group");
    assert_eq!(topics_only(Vec::new()).polices(11), None, "no group rules");

    let mut join = JoinGroupRequest::default();
    join.group_id = GroupId(StrBytes::from_static_str("a.readers"));
    let mut delete = DeleteGroupsRequest::default();
    delete.groups_names = vec![GroupId(StrBytes::from_static_str("a.readers"))];
    let frames = [
        (
            Operation::Consume,
            sluice_kafka::encode::request(ApiKey::JoinGroup, 6, 5, "x", &join),
        ),
        (
            Operation::Delete,
            sluice_kafka::encode::request(ApiKey::DeleteGroups, 2, 5, "x", &delete),
        ),
    ];
    let ids = TopicIds::default();
    for (op, frame) in frames {
        let frame = frame.unwrap();
        let header = sluice_kafka::frame::request_header(&frame).unwrap();
        let who = |principal| Client {
            id: "alice",
            principal: Some(principal),
        };
        let mut denials = Denials::default();
        let alice = p.police((&frame, &header), &ids, op, who("alice"), &mut denials);
        assert!(matches!(alice.unwrap(), Policed::Forward), "{op:?}");
        let mut denials = Denials::default();
        let bob = p.police((&frame, &header), &ids, op, who("bob"), &mut denials);
        assert!(
            matches!(bob.unwrap(), Policed::Answer { denied: 1, .. }),
            "{op:?}"
        );
        assert_eq!(denials.denied.written(), "group:a.readers");
    }
}
