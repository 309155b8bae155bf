//! What a configuration references: the files validation read, and the
//! effective version (the configuration plus their contents). The watcher,
//! which never parses the configuration, learns from these which files to
//! watch and whether anything it sees changed.

use std::sync::Mutex;

use sluice_admin_api::{ConfigVersion, EffectiveVersion};
use sluice_volume::{effective_version, sha256_hex};

use crate::files::{FileError, FileSource, ReadError};

/// The files a validation read and the effective version they make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Referenced {
    /// Every referenced path, as written in the configuration, in the order
    /// validation read them, each once.
    pub files: Vec<String>,
    /// The configuration's version and the contents of `files`, digested.
    pub effective_version: EffectiveVersion,
}

/// A [`FileSource`] that remembers what was read through it: each path
/// once, with the version of its content (`None`: unreadable). A path
/// refused because it lies outside the allowed roots is not remembered: the
/// proxy never names it to the watcher, which would read it to compare.
pub(crate) struct Recording<'a> {
    inner: &'a dyn FileSource,
    reads: Mutex<Vec<(String, Option<String>)>>,
}

impl<'a> Recording<'a> {
    pub(crate) fn new(inner: &'a dyn FileSource) -> Self {
        Recording {
            inner,
            reads: Mutex::new(Vec::new()),
        }
    }

    /// What was read, for a configuration of version `config_version`.
    pub(crate) fn referenced(self, config_version: &ConfigVersion) -> Referenced {
        let reads = self
            .reads
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let effective_version = effective_version(
            config_version,
            reads.iter().map(|(p, v)| (p.as_str(), v.as_deref())),
        );
        Referenced {
            files: reads.into_iter().map(|(p, _)| p).collect(),
            effective_version,
        }
    }
}

impl FileSource for Recording<'_> {
    fn read(&self, path: &str) -> Result<Vec<u8>, FileError> {
        let result = self.inner.read(path);
        let mut reads = self
            .reads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let outside = matches!(result, Err(FileError::Read(ReadError::OutsideRoots)));
        if !outside && !reads.iter().any(|(p, _)| p == path) {
            let version = result.as_deref().ok().map(sha256_hex);
            reads.push((path.to_owned(), version));
        }
        result
    }

    fn loads(&self) -> bool {
        self.inner.loads()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryFiles;

    #[test]
    fn each_file_once_in_order_and_the_version_follows_their_contents() {
        let files = MemoryFiles::default()
            .with("b.pem", b"one")
            .with("a.pem", b"two");
        let recording = Recording::new(&files);
        for path in ["b.pem", "a.pem", "b.pem", "missing.pem"] {
            let _ = recording.read(path);
        }
        let first = recording.referenced(&sluice_volume::config_version(b"c"));
        assert_eq!(first.files, ["b.pem", "a.pem", "missing.pem"]);

        let changed = MemoryFiles::default()
            .with("b.pem", b"one!")
            .with("a.pem", b"two");
        let recording = Recording::new(&changed);
        for path in ["b.pem", "a.pem", "missing.pem"] {
            let _ = recording.read(path);
        }
        let second = recording.referenced(&sluice_volume::config_version(b"c"));
        assert_eq!(second.files, first.files);
        assert_ne!(second.effective_version, first.effective_version);
    }

    #[test]
    fn a_path_outside_the_roots_is_not_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("in.pem"), b"x").unwrap();
        let files = crate::LocalFiles::relative_to(dir.path());
        let recording = Recording::new(&files);
        for path in ["in.pem", "/etc/hostname", "../x", "missing.pem"] {
            let _ = recording.read(path);
        }
        assert_eq!(
            recording
                .referenced(&sluice_volume::config_version(b"c"))
                .files,
            ["in.pem", "missing.pem"]
        );
    }
}
