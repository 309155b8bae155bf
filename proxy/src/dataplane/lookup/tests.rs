//! The decision with explicit instants, and the single flight with tokio's
//! paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::{Change, Decision, FAILURE_MEMORY, Failure, Lookups, MAX_WAITERS, Memory, Via};
use crate::metrics::Metrics;

fn failure(cause: &str) -> Failure {
    Failure {
        cause: cause.into(),
        auth: false,
    }
}

#[test]
fn a_failure_is_remembered_for_a_second_then_looked_up_again() {
    let t0 = Instant::now();
    let mut m = Memory::default();
    let Decision::Lead(flight) = m.decide(t0) else {
        panic!("the first looks up")
    };
    assert_eq!(
        m.finish(flight, t0, Err(failure("refused"))),
        Some(Change::Failing(failure("refused")))
    );
    let almost = t0 + FAILURE_MEMORY - Duration::from_millis(1);
    assert_eq!(
        m.decide(almost),
        Decision::Remembered(Err(failure("refused")))
    );
    m.forget();
    let Decision::Lead(forgotten) = m.decide(almost) else {
        panic!("forgotten: looked up again at once")
    };
    m.finish(forgotten, t0, Err(failure("refused")));
    let Decision::Lead(again) = m.decide(t0 + FAILURE_MEMORY) else {
        panic!("looked up again once the memory expired")
    };
    // The same cause again: nothing new to log.
    assert_eq!(
        m.finish(again, t0 + FAILURE_MEMORY, Err(failure("refused"))),
        None
    );
    let later = t0 + 2 * FAILURE_MEMORY;
    let Decision::Lead(third) = m.decide(later) else {
        panic!("looked up")
    };
    assert_eq!(
        m.finish(third, later, Ok(())),
        Some(Change::Recovered("refused".into()))
    );
}

#[test]
fn while_one_is_in_flight_the_others_wait_for_it_bounded() {
    let t0 = Instant::now();
    let mut m = Memory::default();
    let Decision::Lead(flight) = m.decide(t0) else {
        panic!("the first looks up")
    };
    for _ in 0..MAX_WAITERS {
        assert_eq!(m.decide(t0), Decision::Wait(flight));
    }
    assert_eq!(m.decide(t0), Decision::Crowded);
    m.leave();
    assert_eq!(m.decide(t0), Decision::Wait(flight));
    assert_eq!(m.outcome_of(flight), None);
    m.finish(flight, t0, Ok(()));
    assert_eq!(m.outcome_of(flight), Some(Ok(())));
}

#[test]
fn an_abandoned_flight_hands_over_and_its_late_end_is_ignored() {
    let t0 = Instant::now();
    let mut m = Memory::default();
    let Decision::Lead(first) = m.decide(t0) else {
        panic!("the first looks up")
    };
    assert_eq!(m.decide(t0), Decision::Wait(first));
    m.abandon(first);
    assert_eq!(m.outcome_of(first), None);
    let Decision::Lead(second) = m.decide(t0) else {
        panic!("a waiter takes over")
    };
    assert_ne!(first, second);
    assert_eq!(m.finish(first, t0, Err(failure("stale"))), None);
    assert_eq!(m.decide(t0), Decision::Wait(second));
}

#[tokio::test(start_paused = true)]
async fn concurrent_connections_share_one_lookup_and_survive_its_leader_leaving() {
    let lookups = Arc::new(Lookups::default());
    let metrics = Arc::new(Metrics::new()).cluster("orders");
    let runs = Arc::new(AtomicUsize::new(0));
    let slow = |runs: Arc<AtomicUsize>| {
        move || async move {
            runs.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(100)).await;
            Err(failure("refused"))
        }
    };
    // The first leader goes away mid-lookup.
    let leader = {
        let (lookups, metrics, runs) = (Arc::clone(&lookups), metrics.clone(), Arc::clone(&runs));
        tokio::spawn(async move { lookups.once("orders", &metrics, slow(runs)).await })
    };
    tokio::task::yield_now().await;
    let waiters: Vec<_> = (0..10)
        .map(|_| {
            let (lookups, metrics, runs) =
                (Arc::clone(&lookups), metrics.clone(), Arc::clone(&runs));
            tokio::spawn(async move { lookups.once("orders", &metrics, slow(runs)).await })
        })
        .collect();
    tokio::task::yield_now().await;
    leader.abort();
    let mut vias = Vec::new();
    for w in waiters {
        let (via, outcome) = w.await.unwrap();
        assert_eq!(outcome, Err(failure("refused")));
        vias.push(via);
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the aborted one, then one more"
    );
    assert_eq!(vias.iter().filter(|v| **v == Via::Own).count(), 1);
    assert_eq!(vias.iter().filter(|v| **v == Via::Shared).count(), 9);
    // Remembered: no third run.
    let (via, _) = lookups
        .once("orders", &metrics, slow(Arc::clone(&runs)))
        .await;
    assert_eq!((via, runs.load(Ordering::SeqCst)), (Via::Remembered, 2));
}
