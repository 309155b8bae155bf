//! Peers that prove nothing yet: a held proxy, a canary gone silent.

use super::*;

#[test]
fn a_held_peer_runs_nothing_and_holds_the_next_slot() {
    let now = Instant::now();
    let mut canary = peer(0, now, 0, V, 60);
    if let Some(s) = canary.status.as_mut() {
        s.held = true;
    }
    let peers = [canary, peer(1, now, 0, OLD, 60)];
    let decision = decide(1, &t(V), &peers, now, &settings());
    assert!(
        matches!(&decision, Decision::Wait(why) if why.contains("pod-0")),
        "{decision:?}"
    );
}

#[test]
fn a_silent_canary_holds_the_next_slot_until_it_is_left_out() {
    let now = Instant::now();
    let mut canary = peer(0, now, 20, V, 25);
    canary.silent_since = Some(now - Duration::from_secs(10));
    let peers = [canary.clone(), peer(1, now, 0, OLD, 60)];
    // It ran the version 25 s when last read, 20 s ago: 45 s by the clock,
    // past the 30 s soak; but it has not answered since.
    let decision = decide(1, &t(V), &peers, now, &settings());
    assert!(
        matches!(&decision, Decision::Wait(why) if why.contains("does not answer")),
        "{decision:?}"
    );
    // Once left out, slot 1 is the canary: it applies (and soaks) itself.
    let later = now + Duration::from_secs(25);
    assert_eq!(
        decide(1, &t(V), &peers, later, &settings()),
        Decision::Apply
    );
}
