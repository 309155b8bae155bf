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

use std::path::{Path, PathBuf};

use sluice_admin_api::ConfigVersion;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

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
                    self.watches.push(tokio::spawn(async move {
                        while watcher.changed().await.is_some() {
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

    /// The effective version of `content` with the referenced files as this
    /// watcher reads them now.
    pub fn effective(&self, content: &Content) -> String {
        let versions: Vec<Option<String>> = self
            .files
            .iter()
            .map(|f| read_version(&self.resolve(f)))
            .collect();
        // Unreadable content has no version, and so no effective one.
        let Ok(config) = content.digest.parse::<ConfigVersion>() else {
            return String::new();
        };
        sluice_volume::effective_version(
            &config,
            self.files
                .iter()
                .zip(&versions)
                .map(|(f, v)| (f.as_str(), v.as_deref())),
        )
        .to_string()
    }

    /// Waits for a change of any referenced file (forever when none is
    /// watched).
    pub async fn changed(&mut self) {
        if self.rx.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
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
            digest: sluice_volume::sha256_hex(bytes),
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
        let none = files.effective(&c);
        files.set(vec!["certs/server.crt".into(), "missing.pem".into()]);
        let before = files.effective(&c);
        assert_ne!(before, none);
        std::fs::write(&cert, "two").unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), files.changed())
            .await
            .expect("the change wakes the watch");
        assert_ne!(files.effective(&c), before);
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
