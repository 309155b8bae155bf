//! Watching one file for new content: a file in a Kubernetes ConfigMap or
//! Secret volume (kubelet swaps the `..data` symlink), or a plain file on a
//! host (edited in place, renamed over, or deleted and created again).
//!
//! The directory is watched, never the file's own inode. Every event that
//! can change content (not an open, a read or a close without a write: the
//! loop's own reads must not wake it) only *pokes* a loop that reads the file and compares a hash of its content with
//! the last one: mtimes and event kinds are never trusted for *what* changed.
//! A rename that lands `..data` (kubelet's atomic swap) or the file itself
//! (an editor's rename-over) is a commit: the content is whole, so it is
//! read at once. Any other event (a write in place, say) waits for a quiet
//! moment first, so a burst of writes coalesces. A periodic resync (and an
//! inotify overflow) reads the file anyway, because inotify can drop events;
//! a watch that lost its directory is re-armed. Where inotify cannot start,
//! polling takes over.
//! The newest content always wins: consumers see a `watch` channel.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::{mpsc, watch};

use sluice_admin_api::ConfigVersion;

use crate::version::config_version;

/// How the file is watched.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Poll instead of using inotify (filesystems without inotify, NFS).
    pub poll: bool,
    /// How often polling reads the file.
    pub poll_interval: Duration,
    /// How often the file is read even without events.
    pub resync: Duration,
    /// Quiet time after the last event before the file is read.
    pub debounce: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            poll: false,
            poll_interval: Duration::from_secs(1),
            resync: Duration::from_secs(60),
            debounce: Duration::from_millis(10),
        }
    }
}

/// One reading of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// The bytes; `None` when the file could not be read (missing, say).
    pub bytes: Option<Vec<u8>>,
    /// The version of the bytes; `None` when the file could not be read.
    pub digest: Option<ConfigVersion>,
    /// For a volume: the `..<timestamp>` directory `..data` pointed at.
    pub data_dir: Option<String>,
    /// When this reading was taken.
    pub read_at: SystemTime,
}

impl Content {
    /// Reads `path` now.
    pub fn read(path: &Path) -> Content {
        let bytes = std::fs::read(path).ok();
        let digest = bytes.as_deref().map(config_version);
        let data_dir = path
            .parent()
            .and_then(|d| std::fs::read_link(d.join("..data")).ok())
            .map(|t| t.to_string_lossy().into_owned());
        Content {
            bytes,
            digest,
            data_dir,
            read_at: SystemTime::now(),
        }
    }

    /// How long ago kubelet wrote this version, from the `..<timestamp>`
    /// directory's name (`..2026_11_22_03_56_07.123456789`), if known.
    pub fn propagation_lag(&self) -> Option<Duration> {
        let written = parse_data_dir(self.data_dir.as_deref()?)?;
        self.read_at.duration_since(written).ok()
    }
}

/// Parses kubelet's `..YYYY_MM_DD_HH_MM_SS.NNNNNNNNN` directory name (UTC).
pub fn parse_data_dir(name: &str) -> Option<SystemTime> {
    let rest = name.strip_prefix("..")?;
    let (stamp, nanos) = rest.split_once('.').unwrap_or((rest, "0"));
    let parts: Vec<u64> = stamp
        .split('_')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [y, mo, d, h, mi, s] = parts[..] else {
        return None;
    };
    let days = days_from_civil(i64::try_from(y).ok()?, mo, d)?;
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + mi * 60 + s;
    let nanos: u32 = format!("{nanos:0<9}").get(..9)?.parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::new(secs, nanos))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u64, d: u64) -> Option<i64> {
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let (m, d) = (m as i64, d as i64);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// Whether `path` lives in a ConfigMap/Secret volume (its directory has `..data`).
pub fn is_volume(path: &Path) -> bool {
    path.parent().is_some_and(|d| {
        std::fs::symlink_metadata(d.join("..data")).is_ok_and(|m| m.file_type().is_symlink())
    })
}

/// Whether `path` looks like a Kubernetes subPath mount: a single file
/// mounted on its own (another device than its directory), outside a volume
/// layout. Kubernetes never updates those.
pub fn looks_like_subpath(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(file), Some(Ok(dir))) = (
        std::fs::metadata(path),
        path.parent().map(std::fs::metadata),
    ) else {
        return false;
    };
    !is_volume(path) && file.dev() != dir.dev()
}

/// Watching failed to start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The path has no parent directory to watch.
    #[error("{0}: not a file inside a directory")]
    NoDirectory(PathBuf),
}

/// A running watch; dropping it stops the watching task.
#[derive(Debug)]
pub struct VolumeWatcher {
    rx: watch::Receiver<Content>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for VolumeWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl VolumeWatcher {
    /// Starts watching `path`; the first reading is taken now.
    pub fn start(path: &Path, options: WatchOptions) -> Result<VolumeWatcher, WatchError> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let name = path
            .file_name()
            .ok_or_else(|| WatchError::NoDirectory(path.to_path_buf()))?
            .to_owned();
        // Arm the watch before the first reading, so no change can fall
        // between the two.
        let (poke_tx, pokes) = mpsc::unbounded_channel();
        let armed = if options.poll {
            None
        } else {
            arm(&dir, Path::new(&name), &poke_tx)
        };
        let first = Content::read(path);
        let (tx, rx) = watch::channel(first);
        let loop_ = Loop {
            path: path.to_path_buf(),
            dir,
            name: name.into(),
            options,
            tx,
            poke_tx,
            pokes,
        };
        let task = tokio::spawn(loop_.run(armed));
        Ok(VolumeWatcher { rx, task })
    }

    /// The newest content.
    pub fn current(&self) -> Content {
        self.rx.borrow().clone()
    }

    /// Waits for content with another digest than the last one returned, and
    /// returns the newest. `None` when the watching task has ended.
    pub async fn changed(&mut self) -> Option<Content> {
        self.rx.changed().await.ok()?;
        Some(self.rx.borrow_and_update().clone())
    }

    /// A receiver of its own, for code that wants `watch` semantics.
    pub fn subscribe(&self) -> watch::Receiver<Content> {
        self.rx.clone()
    }
}

/// What woke the loop.
enum Wake {
    /// A rename landed `..data` or the file: read now.
    Commit,
    /// An event touched the file or `..data` (or the queue overflowed).
    Poke,
    /// The watch is broken (directory gone): re-arm it.
    Rearm,
}

/// The watching task's state.
struct Loop {
    path: PathBuf,
    dir: PathBuf,
    name: PathBuf,
    options: WatchOptions,
    tx: watch::Sender<Content>,
    poke_tx: mpsc::UnboundedSender<Wake>,
    pokes: mpsc::UnboundedReceiver<Wake>,
}

impl Loop {
    async fn run(mut self, armed: Option<notify::RecommendedWatcher>) {
        let polling = armed.is_none();
        // Held for its lifetime: dropping it ends the inotify watch.
        let mut _watch = armed;
        if polling && !self.options.poll {
            tracing::warn!(dir = %self.dir.display(), "inotify unavailable; polling instead");
        }
        let tick = if polling {
            self.options.poll_interval
        } else {
            self.options.resync
        };
        let mut interval = tokio::time::interval(tick);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.tick().await;
        loop {
            let wake = tokio::select! {
                w = self.pokes.recv() => w.unwrap_or(Wake::Rearm),
                _ = interval.tick() => Wake::Poke,
                () = self.tx.closed() => return,
            };
            if matches!(wake, Wake::Rearm) && !polling {
                tracing::info!(dir = %self.dir.display(), "watch lost its directory; re-arming");
                _watch = arm(&self.dir, &self.name, &self.poke_tx);
            }
            // Coalesce a burst of writes: wait until no event came for
            // `debounce`. A commit is whole already.
            let mut commit = matches!(wake, Wake::Commit);
            while !commit {
                match tokio::time::timeout(self.options.debounce, self.pokes.recv()).await {
                    Ok(Some(Wake::Rearm)) if !polling => {
                        _watch = arm(&self.dir, &self.name, &self.poke_tx)
                    }
                    Ok(Some(Wake::Commit)) => commit = true,
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => break,
                }
            }
            let content = Content::read(&self.path);
            if content.digest != self.tx.borrow().digest {
                tracing::debug!(file = %self.path.display(), digest = content.digest.as_ref().map(ConfigVersion::as_str), "new content");
                self.tx.send_replace(content);
            }
        }
    }
}

/// Whether an event of this kind can change what the file holds: writes,
/// a close after writing, creates, renames, removals and attribute changes
/// can; an open, a read or a close without a write cannot.
fn can_change_content(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Starts an inotify watch on `dir` that pokes for events about `name` or
/// `..data`; `None` when inotify cannot start.
fn arm(
    dir: &Path,
    name: &Path,
    pokes: &mpsc::UnboundedSender<Wake>,
) -> Option<notify::RecommendedWatcher> {
    let name = name.to_path_buf();
    let watched_dir = dir.to_path_buf();
    let pokes = pokes.clone();
    let handler = move |event: notify::Result<notify::Event>| {
        let wake = match event {
            Err(_) => Some(Wake::Rearm),
            Ok(e) if e.need_rescan() => Some(Wake::Poke),
            // Opens, reads and closes without a write (the loop's own read
            // among them) change nothing: waking on them would read forever.
            Ok(e) if !can_change_content(&e.kind) => None,
            Ok(e)
                if matches!(e.kind, EventKind::Remove(_))
                    && e.paths.iter().any(|p| p == &watched_dir) =>
            {
                Some(Wake::Rearm)
            }
            Ok(e) => {
                let watched = |p: &PathBuf| {
                    p.file_name()
                        .is_some_and(|f| f == name.as_os_str() || f == "..data")
                };
                let ours = e.paths.iter().any(watched);
                // A rename's last path is where it landed.
                let landed = matches!(
                    e.kind,
                    EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both))
                ) && e.paths.last().is_some_and(watched);
                if landed {
                    Some(Wake::Commit)
                } else {
                    ours.then_some(Wake::Poke)
                }
            }
        };
        if let Some(w) = wake {
            let _ = pokes.send(w);
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "cannot start inotify");
            return None;
        }
    };
    match watcher.watch(dir, RecursiveMode::NonRecursive) {
        Ok(()) => Some(watcher),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot watch directory");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_timestamps_parse_to_utc() {
        let t = parse_data_dir("..2026_11_22_03_56_07.123456789").unwrap();
        let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!(d.as_secs(), 1_795_319_767);
        assert_eq!(d.subsec_nanos(), 123_456_789);
        assert_eq!(
            parse_data_dir("..1970_01_01_00_00_00.0").unwrap(),
            SystemTime::UNIX_EPOCH
        );
        assert!(parse_data_dir("..data").is_none());
        assert!(parse_data_dir("2026_11_22_03_56_07.1").is_none());
        assert!(parse_data_dir("..2026_13_22_03_56_07.1").is_none());
    }
}
