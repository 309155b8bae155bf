//! An idle watch reads nothing: its own read of the file raises inotify
//! open/access/close events in the watched directory, and those must not wake
//! it (issue 31: a plain file was read 86 times a second, forever).
//!
//! A second inotify watch, independent of the one under test, counts every
//! open of the file while nothing changes it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use notify::event::AccessKind;
use notify::{EventKind, RecursiveMode, Watcher as _};
use sluice_volume::watch::{VolumeWatcher, WatchOptions};

/// How long the idle file is observed.
const WINDOW: Duration = Duration::from_secs(3);

/// Counts the opens of files named `name` in `dirs` while alive.
struct OpenCounter {
    opens: Arc<AtomicUsize>,
    _watch: notify::RecommendedWatcher,
}

impl OpenCounter {
    fn start(dirs: &[&Path], name: &str) -> OpenCounter {
        let opens = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&opens);
        let name = name.to_owned();
        let mut watch = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
            let Ok(e) = e else { return };
            let ours = e
                .paths
                .iter()
                .any(|p| p.file_name().is_some_and(|f| f == name.as_str()));
            if ours && matches!(e.kind, EventKind::Access(AccessKind::Open(_))) {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        })
        .expect("inotify starts");
        for dir in dirs {
            watch
                .watch(dir, RecursiveMode::NonRecursive)
                .expect("directory is watched");
        }
        OpenCounter {
            opens,
            _watch: watch,
        }
    }

    fn opens(&self) -> usize {
        self.opens.load(Ordering::SeqCst)
    }
}

fn options() -> WatchOptions {
    WatchOptions {
        // No resync inside the window: every read in it would be event-driven.
        resync: Duration::from_secs(3600),
        ..WatchOptions::default()
    }
}

/// Opens of `counted` over the window while a watch of `watched` idles.
async fn idle_opens(watched: &Path, counted_dirs: &[&Path], name: &str) -> usize {
    let watch = VolumeWatcher::start(watched, options()).expect("watch starts");
    assert!(
        watch.current().bytes.is_some(),
        "the first reading has the bytes"
    );
    // Let the first reading's own events arrive and settle before counting.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let counter = OpenCounter::start(counted_dirs, name);
    tokio::time::sleep(WINDOW).await;
    let opens = counter.opens();
    drop(watch);
    opens
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_plain_file_is_not_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxy.yaml");
    std::fs::write(&file, "virtualClusters: []\n").unwrap();
    let opens = idle_opens(&file, &[dir.path()], "proxy.yaml").await;
    assert_eq!(
        opens, 0,
        "an idle watch of a plain file opened it {opens} times in {WINDOW:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_volume_file_is_not_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("..2026_11_26_01_00_00.000000001");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("proxy.yaml"), "virtualClusters: []\n").unwrap();
    std::os::unix::fs::symlink(data.file_name().unwrap(), dir.path().join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/proxy.yaml", dir.path().join("proxy.yaml")).unwrap();
    let file = dir.path().join("proxy.yaml");
    let opens = idle_opens(&file, &[dir.path(), &data], "proxy.yaml").await;
    assert_eq!(
        opens, 0,
        "an idle watch of a volume file opened it {opens} times in {WINDOW:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_in_place_is_still_seen() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxy.yaml");
    std::fs::write(&file, "v1\n").unwrap();
    let mut watch = VolumeWatcher::start(&file, options()).expect("watch starts");
    std::fs::write(&file, "v2\n").unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), watch.changed())
        .await
        .expect("the write is seen well before the resync")
        .expect("the watch runs");
    assert_eq!(seen.bytes.as_deref(), Some(&b"v2\n"[..]));
}
