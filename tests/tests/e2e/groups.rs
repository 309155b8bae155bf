//! Consumer groups and transactional ids as resources of a topic policy,
//! in front of tansu (which authorizes nothing itself). With SASL/SCRAM
//! terminated by the proxy and two libraries: alice's group is joined and
//! deleted by alice only; bob, who may read every topic, gets
//! GROUP_AUTHORIZATION_FAILED for both, and his own group works. With raw
//! frames: every API that names a group or a transactional id, at old and
//! new versions, batches naming an allowed and a refused one, and APIs tansu
//! does not even offer, are refused with Kafka's own errors and never reach
//! the broker.

use std::time::Duration;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::audit::audit_lines;
use sluice_tests::config::pinned;
use sluice_tests::kafka::Conn;
use sluice_tests::peers::Tansu;
use sluice_tests::python;

use crate::terminated::credentials;

const GROUPS_BY_USER: &str = "    authentication:
      sasl: { mechanisms: [SCRAM-SHA-512], credentialsFile: users.scram }
    filters:
      - type: topic-policy
        config:
          default: deny
          rules:
            - { allow: [consume, describe, delete], groups: [\"a.*\"], principals: [alice] }
            - { allow: [consume, describe, delete], groups: [\"b.*\"], principals: [bob] }
            - { allow: [consume, describe, produce], topics: [\"*\"] }
";

#[test]
fn a_group_of_one_user_is_neither_joined_nor_deleted_by_another() {
    let dir = tempfile::tempdir().unwrap();
    let users = credentials("alice", "alice-pw") + &credentials("bob", "bob-pw");
    std::fs::write(dir.path().join("users.scram"), users).unwrap();
    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    let base = ports(2);
    let config = pinned("groups", base, &tansu.addr, "", GROUPS_BY_USER);
    let mut proxy = Proxy::start_in(dir, &config);
    // Clients that close a connection before authenticating on it.
    proxy.allow("not authenticated");
    let bootstrap = format!("127.0.0.1:{base}");
    let run = |user: &str, group: &str, action: &str, library: &str| {
        let password = format!("{user}-pw");
        let args = [
            &bootstrap[..],
            user,
            &password,
            "orders",
            group,
            action,
            "--library",
            library,
        ];
        python::run_json("groups.py", &args, Duration::from_secs(90))
    };
    for library in ["librdkafka", "kafka-python"] {
        let theirs = format!("a.readers-{library}");
        let alice = run("alice", &theirs, "join", library);
        assert_eq!(alice["joined"], true, "alice, {library}: {alice}");
        let bob = run("bob", &theirs, "join", library);
        assert_eq!(bob["joined"], false, "bob, {library}: {bob}");
        assert_eq!(bob["error"], "GROUP_AUTHORIZATION_FAILED", "{library}");
        let own = run("bob", &format!("b.readers-{library}"), "join", library);
        assert_eq!(own["joined"], true, "bob's own, {library}: {own}");

        let deleted = run("bob", &theirs, "delete", library);
        assert_eq!(deleted["deleted"], false, "{library}: {deleted}");
        assert_eq!(deleted["error"], "GROUP_AUTHORIZATION_FAILED", "{library}");
        let deleted = run("alice", &theirs, "delete", library);
        assert_eq!(deleted["deleted"], true, "{library}: {deleted}");
    }
    let denied = proxy.metric_sum("sluice_policy_denied_total", "principal=\"bob\"");
    assert!(denied >= 4.0, "{denied}");
    let audit = audit_lines(&proxy);
    let bob_denied = |l: &&serde_json::Value| {
        l["event"] == "denied"
            && l["principal"] == "bob"
            && (l["resources"].as_str()).is_some_and(|r| r.contains("group:a.readers-"))
    };
    assert!(audit.iter().any(|l| bob_denied(&l)), "{audit:?}");
    // Alice's deletions go through, audited as what they are.
    assert!(
        audit.iter().any(|l| l["event"] == "admin"
            && l["principal"] == "alice"
            && l["operation"] == "delete"),
        "{audit:?}"
    );
    proxy.assert_clean_logs();
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

fn group(s: &str) -> GroupId {
    GroupId(text(s))
}

/// By client id, so that raw frames need no authentication: the client
/// `sluice-test` (the raw connection's) has no business with `theirs.*`.
const THEIRS: &str = "    filters:
      - type: topic-policy
        config:
          default: allow
          rules:
            - { deny: [consume, describe, delete], groups: [\"theirs.*\"], clientIds: [sluice-test] }
            - { deny: [produce, describe], transactionalIds: [\"theirs.*\"], clientIds: [sluice-test] }
";

#[test]
fn raw_requests_naming_groups_and_transactional_ids_are_judged_at_every_version() {
    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    let base = ports(2);
    let proxy = Proxy::start(&pinned("raw", base, &tansu.addr, "", THEIRS));
    let mut conn = Conn::connect(&format!("127.0.0.1:{base}"));

    // FindCoordinator, one key (v3) and a batch (v4) naming ours and theirs.
    let mut find = FindCoordinatorRequest::default();
    find.key = text("theirs.g");
    let one: FindCoordinatorResponse = conn.call(ApiKey::FindCoordinator, 3, &find);
    assert_eq!(one.error_code, 30);
    find.key = text("mine.g");
    let mine: FindCoordinatorResponse = conn.call(ApiKey::FindCoordinator, 3, &find);
    assert_eq!(mine.error_code, 0, "ours reaches tansu");
    find.key = StrBytes::default();
    find.coordinator_keys = vec![text("mine.g"), text("theirs.g")];
    let batch: FindCoordinatorResponse = conn.call(ApiKey::FindCoordinator, 4, &find);
    let codes: Vec<i16> = batch.coordinators.iter().map(|c| c.error_code).collect();
    assert_eq!(codes, [30, 30], "a batch naming theirs is refused whole");
    find.key_type = 1;
    find.coordinator_keys = vec![text("theirs.t")];
    let txn: FindCoordinatorResponse = conn.call(ApiKey::FindCoordinator, 4, &find);
    assert_eq!(txn.coordinators[0].error_code, 53);

    // The classic group protocol, old and new versions.
    let mut join = JoinGroupRequest::default();
    join.group_id = group("theirs.g");
    join.protocol_type = text("consumer");
    join.session_timeout_ms = 6000;
    join.rebalance_timeout_ms = 6000;
    for version in [2, 5, 9] {
        let r: JoinGroupResponse = conn.call(ApiKey::JoinGroup, version, &join);
        assert_eq!(r.error_code, 30, "JoinGroup v{version}");
    }
    let mut sync = SyncGroupRequest::default();
    sync.group_id = group("theirs.g");
    let r: SyncGroupResponse = conn.call(ApiKey::SyncGroup, 5, &sync);
    assert_eq!(r.error_code, 30);
    let mut beat = HeartbeatRequest::default();
    beat.group_id = group("theirs.g");
    let r: HeartbeatResponse = conn.call(ApiKey::Heartbeat, 4, &beat);
    assert_eq!(r.error_code, 30);
    let mut leave = LeaveGroupRequest::default();
    leave.group_id = group("theirs.g");
    let r: LeaveGroupResponse = conn.call(ApiKey::LeaveGroup, 5, &leave);
    assert_eq!(r.error_code, 30);
    // KIP-848's heartbeat, which tansu does not offer: still judged.
    let mut next = ConsumerGroupHeartbeatRequest::default();
    next.group_id = group("theirs.g");
    let r: ConsumerGroupHeartbeatResponse = conn.call(ApiKey::ConsumerGroupHeartbeat, 0, &next);
    assert_eq!(r.error_code, 30);

    // Offsets: a commit's partitions, a batched fetch naming ours and theirs.
    let mut commit = OffsetCommitRequest::default();
    commit.group_id = group("theirs.g");
    let mut topic = offset_commit_request::OffsetCommitRequestTopic::default();
    topic.name = TopicName(text("orders"));
    topic.partitions = vec![Default::default()];
    commit.topics = vec![topic];
    let r: OffsetCommitResponse = conn.call(ApiKey::OffsetCommit, 8, &commit);
    assert_eq!(r.topics[0].partitions[0].error_code, 30);
    let mut fetch = OffsetFetchRequest::default();
    fetch.groups = ["mine.g", "theirs.g"]
        .iter()
        .map(|g| {
            let mut each = offset_fetch_request::OffsetFetchRequestGroup::default();
            each.group_id = group(g);
            each
        })
        .collect();
    let r: OffsetFetchResponse = conn.call(ApiKey::OffsetFetch, 8, &fetch);
    assert!(r.groups.iter().all(|g| g.error_code == 30), "{r:?}");

    // Describing and deleting.
    let mut describe = DescribeGroupsRequest::default();
    describe.groups = vec![group("theirs.g")];
    let r: DescribeGroupsResponse = conn.call(ApiKey::DescribeGroups, 5, &describe);
    assert_eq!(r.groups[0].error_code, 30);
    let mut delete = DeleteGroupsRequest::default();
    delete.groups_names = vec![group("theirs.g")];
    let r: DeleteGroupsResponse = conn.call(ApiKey::DeleteGroups, 2, &delete);
    assert_eq!(r.results[0].error_code, 30);

    // Transactions: theirs refused, an idempotent producer (no id) not.
    let mut init = InitProducerIdRequest::default();
    init.transactional_id = Some(TransactionalId(text("theirs.t")));
    init.transaction_timeout_ms = 60_000;
    let r: InitProducerIdResponse = conn.call(ApiKey::InitProducerId, 4, &init);
    assert_eq!(r.error_code, 53);
    init.transactional_id = None;
    let r: InitProducerIdResponse = conn.call(ApiKey::InitProducerId, 4, &init);
    assert_ne!(r.error_code, 53, "idempotent");
    let mut offsets = AddOffsetsToTxnRequest::default();
    offsets.transactional_id = TransactionalId(text("mine.t"));
    offsets.group_id = group("theirs.g");
    let r: AddOffsetsToTxnResponse = conn.call(ApiKey::AddOffsetsToTxn, 3, &offsets);
    assert_eq!(r.error_code, 30, "the group of a transaction");

    assert!(
        !conn.closed_within(Duration::from_millis(200)),
        "still open"
    );
    let denied = proxy.metric_sum("sluice_policy_denied_total", "cluster=\"raw\"");
    assert!(denied >= 16.0, "{denied}");
    proxy.assert_clean_logs();
}
