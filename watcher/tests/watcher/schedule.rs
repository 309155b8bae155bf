//! The per-pod wait, with paused time: slot × stagger, restarted by newer
//! content, which is what gets applied.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use std::sync::Arc;

use sluice_watcher::run::{Heartbeat, Settings, wait_turn};
use sluice_watcher::schedule::{Slot, SlotSource};
use sluice_watcher::volume::{Content, WatchOptions};
use tokio::sync::watch;

fn content(tag: &str) -> Content {
    Content {
        bytes: Some(tag.as_bytes().to_vec()),
        digest: Some(sluice_volume::config_version(tag.as_bytes())),
        data_dir: None,
        read_at: SystemTime::now(),
    }
}

fn settings(slot: u64, stagger: Duration) -> Settings {
    Settings {
        path: PathBuf::from("/unused"),
        watch: WatchOptions::default(),
        slot: Slot {
            index: slot,
            source: SlotSource::Flag,
        },
        stagger,
        jitter: Duration::ZERO,
        retry_deadline: Duration::from_secs(1),
        fleet: None,
    }
}

#[tokio::test(start_paused = true)]
async fn slot_two_waits_two_staggers_and_newer_content_restarts_the_wait() {
    let (tx, mut rx) = watch::channel(content("a"));
    rx.borrow_and_update();
    let s = settings(2, Duration::from_secs(1));
    let start = tokio::time::Instant::now();
    // Never beaten yet: as old as can be.
    let heartbeat = Arc::new(Heartbeat::default());
    let beats = Arc::clone(&heartbeat);
    let waiting = tokio::spawn(async move {
        (
            wait_turn(&s, &beats, &mut rx, content("a")).await,
            tokio::time::Instant::now(),
        )
    });

    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!waiting.is_finished(), "returned before slot × stagger");
    assert!(heartbeat.age() < 60, "waiting for its turn is progress");
    tx.send_replace(content("b"));
    // The wait starts again from here: 2 s more.
    tokio::time::sleep(Duration::from_millis(1900)).await;
    assert!(!waiting.is_finished(), "the restarted wait ended early");
    let (chosen, at) = waiting.await.unwrap();
    assert_eq!(
        chosen.digest,
        content("b").digest,
        "the newest content is the one applied"
    );
    assert_eq!(at - start, Duration::from_millis(3500));
}

#[tokio::test(start_paused = true)]
async fn no_stagger_and_no_jitter_reacts_at_once() {
    let (_tx, mut rx) = watch::channel(content("a"));
    let s = settings(5, Duration::ZERO);
    let start = tokio::time::Instant::now();
    let chosen = wait_turn(&s, &Heartbeat::default(), &mut rx, content("a")).await;
    assert_eq!(chosen.digest, content("a").digest);
    assert_eq!(tokio::time::Instant::now(), start);
}
