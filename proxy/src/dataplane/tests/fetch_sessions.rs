//! Fetch sessions (KIP-227) under a topic policy changed in place: an
//! incremental Fetch names no partition, yet the upstream answers for every
//! partition of the session; after a change of the consume rules the proxy
//! answers it INVALID_FETCH_SESSION_EPOCH, and the client's full Fetch is
//! judged (and split) by the rules in force.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use tokio::io::AsyncWriteExt;

use super::policy::{OK_ONLY, body};
use super::*;
use crate::dataplane::live::InPlace;

/// The last Fetch by name.
const V: i16 = 12;
const RESETS: &str = "sluice_fetch_sessions_reset_total{cluster=\"orders\"}";
const INVALID_FETCH_SESSION_EPOCH: i16 = 71;

/// A Fetch of partition 0 of each of `topics` in session `id` at `epoch`.
fn fetch(correlation_id: i32, id: i32, epoch: i32, topics: &[&str]) -> Vec<u8> {
    let mut r = FetchRequest::default();
    r.max_wait_ms = 100;
    r.session_id = id;
    r.session_epoch = epoch;
    for n in topics {
        let mut t = fetch_request::FetchTopic::default();
        t.topic = TopicName(StrBytes::from_string((*n).to_owned()));
        t.partitions = vec![fetch_request::FetchPartition::default()];
        r.topics.push(t);
    }
    request(ApiKey::Fetch, V, correlation_id, &r)
}

/// The upstream's answer in session `id`: records for each of `topics`.
fn fetched(correlation_id: i32, id: i32, topics: &[&str]) -> Vec<u8> {
    let mut r = FetchResponse::default();
    r.session_id = id;
    for n in topics {
        let mut t = fetch_response::FetchableTopicResponse::default();
        t.topic = TopicName(StrBytes::from_string((*n).to_owned()));
        let mut p = fetch_response::PartitionData::default();
        p.high_watermark = 5;
        p.records = Some(pattern(64));
        t.partitions = vec![p];
        r.responses.push(t);
    }
    response(ApiKey::Fetch, V, correlation_id, &r)
}

/// (top-level error, session id, [(topic, error, has records)]) of a Fetch
/// response.
fn answer(frame: &[u8]) -> (i16, i32, Vec<(String, i16, bool)>) {
    let r: FetchResponse = body(frame, ApiKey::Fetch, V, false);
    let topics = r
        .responses
        .iter()
        .map(|t| {
            let p = &t.partitions[0];
            let records = p.records.as_ref().is_some_and(|r| !r.is_empty());
            (t.topic.to_string(), p.error_code, records)
        })
        .collect();
    (r.error_code, r.session_id, topics)
}

fn topic(name: &str, error: i16, records: bool) -> (String, i16, bool) {
    (name.to_owned(), error, records)
}

/// The client sends `sent`; the upstream gets it byte for byte and answers
/// `answered`, which the client gets byte for byte.
async fn passes(client: &mut TcpStream, upstream: &mut TcpStream, sent: &[u8], answered: &[u8]) {
    client.write_all(sent).await.unwrap();
    assert_eq!(read_frame(upstream).await, sent, "forwarded as it came");
    upstream.write_all(answered).await.unwrap();
    assert_eq!(read_frame(client).await, answered);
}

/// The cluster's filters set to `filters` in place.
fn reload(rig: &Rig, filters: &str) {
    let upstream = rig.cluster.config.upstream.bootstrap_servers[0].to_string();
    let next = cluster_config(upstream.parse().unwrap(), filters);
    rig.cluster.apply_in_place(InPlace::of(&next).unwrap());
}

#[tokio::test]
async fn an_incremental_fetch_after_a_consume_change_starts_its_session_again() {
    let mut rig = Rig::start("").await;
    let (mut client, mut upstream) = rig.connection().await;
    let (c, u) = (&mut client, &mut upstream);
    // No policy: the session opens, and its incremental Fetch (naming
    // nothing) gets records of both topics.
    let both = ["ok-a", "no-b"];
    passes(c, u, &fetch(1, 0, 0, &both), &fetched(1, 77, &both)).await;
    passes(c, u, &fetch(2, 77, 1, &[]), &fetched(2, 77, &both)).await;

    reload(&rig, OK_ONLY);
    c.write_all(&fetch(3, 77, 2, &[])).await.unwrap();
    let reset = read_frame(c).await;
    assert_eq!(correlation(&reset), 3);
    assert_eq!(
        answer(&reset),
        (INVALID_FETCH_SESSION_EPOCH, 0, vec![]),
        "answered by the proxy: no-b's records never reach the client"
    );
    // The client fetches in full (closing the session): judged by the
    // policy in force, split; the reset Fetch never went upstream.
    c.write_all(&fetch(4, 77, 0, &both)).await.unwrap();
    assert_eq!(read_frame(u).await, fetch(4, 77, 0, &["ok-a"]));
    u.write_all(&fetched(4, 78, &["ok-a"])).await.unwrap();
    assert_eq!(
        answer(&read_frame(c).await),
        (
            0,
            78,
            vec![topic("no-b", 29, false), topic("ok-a", 0, true)]
        ),
        "the refused topic first (it streams ahead of the records)"
    );
    // The new session was judged by the rules in force: it goes on.
    passes(c, u, &fetch(5, 78, 1, &[]), &fetched(5, 78, &["ok-a"])).await;
    assert_eq!(rig.metric(RESETS), 1.0);

    // Removed: the session the policy judged starts again too (the
    // partitions it refused come back in the full Fetch).
    reload(&rig, "");
    c.write_all(&fetch(6, 78, 2, &[])).await.unwrap();
    let reset = read_frame(c).await;
    assert_eq!(answer(&reset).0, INVALID_FETCH_SESSION_EPOCH);
    passes(c, u, &fetch(7, 78, 0, &both), &fetched(7, 79, &both)).await;
    passes(c, u, &fetch(8, 79, 1, &[]), &fetched(8, 79, &both)).await;
    assert_eq!(rig.metric(RESETS), 2.0);
}

#[tokio::test]
async fn a_session_a_new_connection_continues_is_judged_again() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    client.write_all(&fetch(1, 77, 9, &[])).await.unwrap();
    let reset = read_frame(&mut client).await;
    assert_eq!(answer(&reset).0, INVALID_FETCH_SESSION_EPOCH);
    let full = fetch(2, 77, 0, &["ok-a"]);
    passes(
        &mut client,
        &mut upstream,
        &full,
        &fetched(2, 80, &["ok-a"]),
    )
    .await;
}

#[tokio::test]
async fn a_chain_change_that_leaves_the_consume_rules_alone_resets_nothing() {
    let mut rig = Rig::start(OK_ONLY).await;
    let (mut client, mut upstream) = rig.connection().await;
    let (c, u) = (&mut client, &mut upstream);
    passes(c, u, &fetch(1, 0, 0, &["ok-a"]), &fetched(1, 77, &["ok-a"])).await;
    passes(c, u, &fetch(2, 77, 1, &[]), &fetched(2, 77, &["ok-a"])).await;
    // A quota added: the policy is rebuilt, its rules the same.
    let quota = "      - type: quota\n        config: { connectionsPerSecond: 1000 }\n";
    reload(&rig, &format!("{OK_ONLY}{quota}"));
    passes(c, u, &fetch(3, 77, 2, &[]), &fetched(3, 77, &["ok-a"])).await;
    // A rule for produce only.
    let produce = OK_ONLY.replace(
        "          rules:\n",
        "          rules:\n            - deny: [produce]\n              topics: [ok-z]\n",
    );
    assert_ne!(produce, OK_ONLY);
    reload(&rig, &produce);
    passes(c, u, &fetch(4, 77, 3, &[]), &fetched(4, 77, &["ok-a"])).await;
    assert_eq!(rig.metric(RESETS), 0.0);
}

#[tokio::test]
async fn a_session_is_known_by_its_id_on_every_connection() {
    let mut rig = Rig::start("").await;
    // A session opened on `open.a`-like `no-b` before the policy.
    let (mut first, mut first_up) = rig.connection().await;
    let opened = fetch(1, 0, 0, &["no-b"]);
    passes(
        &mut first,
        &mut first_up,
        &opened,
        &fetched(1, 77, &["no-b"]),
    )
    .await;

    reload(&rig, OK_ONLY);
    // Another connection: a sessionless full Fetch of an allowed topic,
    // judged by the rules in force, then the old session continued.
    let (mut c, mut u) = rig.connection().await;
    let sessionless = fetch(2, 0, -1, &["ok-a"]);
    passes(&mut c, &mut u, &sessionless, &fetched(2, 0, &["ok-a"])).await;
    c.write_all(&fetch(3, 77, 1, &[])).await.unwrap();
    let reset = read_frame(&mut c).await;
    assert_eq!(correlation(&reset), 3);
    assert_eq!(
        answer(&reset),
        (INVALID_FETCH_SESSION_EPOCH, 0, vec![]),
        "no-b's session, opened before the policy, never goes upstream"
    );

    // A session opened under the rules in force goes on, on any connection
    // (a client that reconnects keeps its session).
    let full = fetch(4, 0, 0, &["ok-a"]);
    passes(&mut c, &mut u, &full, &fetched(4, 80, &["ok-a"])).await;
    let (mut next, mut next_up) = rig.connection().await;
    let more = fetch(1, 80, 1, &[]);
    passes(&mut next, &mut next_up, &more, &fetched(1, 80, &["ok-a"])).await;
    assert_eq!(rig.metric(RESETS), 1.0);
}
