//! The files the configuration references (certificates, keys, CAs). The
//! watcher never parses the configuration: the proxy names them in its
//! validate and status answers. The watcher watches each one (a Secret
//! volume's `..data` swap included, by the same volume watcher as the
//! configuration) and computes the effective version of what it sees, by
//! the proxy's own function and through the proxy's own reader
//! ([`sluice_volume::file`]: regular files, at most 1 MiB), so a renewed
//! certificate is noticed when the configuration's bytes did not change,
//! and a file both sides can read gives both the same version. The proxy
//! names only files beneath its roots, so no roots are applied here.
//!
//! Each file's digest is kept with what `stat` said of it (device, inode,
//! size, modification and change times): a file is read and hashed again
//! only when that changes, when one of the watches saw an event, or at a
//! resync ([`Referenced::forget`]), so observing the effective version at
//! every step of a pass costs a `stat` per file.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use sluice_admin_api::{ConfigVersion, EffectiveVersion};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::decide::Seen;
use crate::volume::{Content, VolumeWatcher, WatchOptions};

/// The referenced files, their watches, and their changes.
#[derive(Debug)]
pub struct Referenced {
    /// The configuration's directory: relative paths are taken from it.
    base: PathBuf,
    options: WatchOptions,
    files: Vec<String>,
    /// One forwarding task per watched file; each holds its watcher.
    watches: Vec<JoinHandle<()>>,
    tx: mpsc::Sender<()>,
    rx: mpsc::Receiver<()>,
    /// Set by the watches on any event: the cached digests are stale.
    stale: Arc<AtomicBool>,
    /// Each file's digest, by its path as resolved, with its stamp.
    cache: HashMap<PathBuf, (Stamp, Option<String>)>,
}

/// What `stat` says of a file that changes when its content does (a
/// rewrite within one tick of a coarse clock, at the same size, excepted:
/// the watch's event then invalidates the digest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let m = std::fs::metadata(path).ok()?;
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.size(),
            modified: (m.mtime(), m.mtime_nsec()),
            changed: (m.ctime(), m.ctime_nsec()),
        })
    }
}

impl Drop for Referenced {
    fn drop(&mut self) {
        self.unwatch();
    }
}

impl Referenced {
    /// For the configuration at `config`, watched with `options`; no files yet.
    pub fn new(config: &Path, options: WatchOptions) -> Referenced {
        let base = config
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        // One pending change is enough: whoever wakes reads everything anew.
        let (tx, rx) = mpsc::channel(1);
        Referenced {
            base,
            options,
            files: Vec::new(),
            watches: Vec::new(),
            tx,
            rx,
            stale: Arc::new(AtomicBool::new(false)),
            cache: HashMap::new(),
        }
    }

    /// The files as the proxy last named them.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Sets the files the proxy named; watches them when they differ from
    /// the ones watched. A file whose directory does not exist yet is
    /// picked up by the resync.
    pub fn set(&mut self, files: Vec<String>) {
        if files == self.files {
            return;
        }
        self.unwatch();
        for file in &files {
            let path = self.resolve(file);
            match VolumeWatcher::start(&path, self.options.clone()) {
                Ok(mut watcher) => {
                    let tx = self.tx.clone();
                    let stale = Arc::clone(&self.stale);
                    self.watches.push(tokio::spawn(async move {
                        while watcher.changed().await.is_some() {
                            stale.store(true, Ordering::SeqCst);
                            let _ = tx.try_send(());
                        }
                    }));
                }
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "cannot watch a referenced file; the resync will notice its changes");
                }
            }
        }
        tracing::info!(files = ?files, "watching the files the configuration references");
        self.files = files;
    }

    fn unwatch(&mut self) {
        for task in self.watches.drain(..) {
            task.abort();
        }
    }

    fn resolve(&self, file: &str) -> PathBuf {
        let path = Path::new(file);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.base.join(path)
        }
    }

    /// `content`'s versions, with the referenced files as this watcher
    /// reads them now; `None` when the content cannot be read.
    pub fn seen(&mut self, content: &Content) -> Option<Seen> {
        let config = content.digest.clone()?;
        let effective = self.effective(&config);
        Some(Seen { config, effective })
    }

    /// The effective version of the configuration `config` with the
    /// referenced files as this watcher reads them now.
    pub fn effective(&mut self, config: &ConfigVersion) -> EffectiveVersion {
        if self.stale.swap(false, Ordering::SeqCst) {
            self.cache.clear();
        }
        let paths: Vec<PathBuf> = self.files.iter().map(|f| self.resolve(f)).collect();
        let versions: Vec<Option<String>> = paths
            .into_iter()
            .map(|path| cached_version(&mut self.cache, path))
            .collect();
        sluice_volume::effective_version(
            config,
            self.files
                .iter()
                .zip(&versions)
                .map(|(f, v)| (f.as_str(), v.as_deref())),
        )
    }

    /// Forgets every file's digest: the next observation reads them all
    /// (the resync: inotify can drop events).
    pub fn forget(&mut self) {
        self.cache.clear();
    }

    /// Waits for a change of any referenced file (forever when none is
    /// watched).
    pub async fn changed(&mut self) {
        if self.rx.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}

/// `path`'s version from `cache` when its stamp did not change, else read
/// (and cached when it could be stamped).
fn cached_version(
    cache: &mut HashMap<PathBuf, (Stamp, Option<String>)>,
    path: PathBuf,
) -> Option<String> {
    let Some(stamp) = Stamp::of(&path) else {
        cache.remove(&path);
        return None;
    };
    if let Some((_, version)) = cache.get(&path).filter(|(known, _)| *known == stamp) {
        return version.clone();
    }
    let version = read_version(&path);
    cache.insert(path, (stamp, version.clone()));
    version
}

/// The version of a regular file's content; `None` when the proxy's reader
/// refuses it (missing, not a regular file, too large), as the proxy's
/// validation then does.
fn read_version(path: &Path) -> Option<String> {
    sluice_volume::read_regular(path, sluice_volume::MAX_FILE_BYTES)
        .ok()
        .map(|bytes| sluice_volume::sha256_hex(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(bytes: &[u8]) -> Content {
        Content {
            bytes: Some(bytes.to_vec()),
            digest: Some(sluice_volume::config_version(bytes)),
            data_dir: None,
            read_at: std::time::SystemTime::now(),
        }
    }

    #[tokio::test]
    async fn a_changed_file_changes_the_effective_version_and_wakes_the_watch() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("proxy.yaml");
        std::fs::write(&config, "x").unwrap();
        std::fs::create_dir(dir.path().join("certs")).unwrap();
        let cert = dir.path().join("certs/server.crt");
        std::fs::write(&cert, "one").unwrap();
        let mut files = Referenced::new(&config, WatchOptions::default());
        let c = content(b"x");
        let none = files.seen(&c);
        files.set(vec!["certs/server.crt".into(), "missing.pem".into()]);
        let before = files.seen(&c);
        assert_ne!(before, none);
        std::fs::write(&cert, "two").unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), files.changed())
            .await
            .expect("the change wakes the watch");
        let after = files.seen(&c);
        assert_ne!(after, before);
        // A digest is kept only while the file's stamp stands: a change is
        // seen at once, before its event arrives.
        std::fs::write(&cert, "three").unwrap();
        assert_ne!(files.seen(&c), after);
        std::fs::write(&cert, "two").unwrap();
        assert_eq!(files.seen(&c), after);
        // A FIFO is never opened.
        let fifo = dir.path().join("missing.pem");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(read_version(&fifo), None);
    }

    /// The proxy reads at most 1 MiB; a larger file is unreadable to both
    /// sides alike, so both compute the same effective version.
    #[test]
    fn a_file_the_proxy_refuses_as_too_large_is_unreadable_here_too() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("bundle.pem");
        std::fs::write(&big, vec![b'x'; 2 * 1024 * 1024]).unwrap();
        assert_eq!(read_version(&big), None);
        std::fs::write(&big, b"x").unwrap();
        assert_eq!(read_version(&big), Some(sluice_volume::sha256_hex(b"x")));
    }
}
