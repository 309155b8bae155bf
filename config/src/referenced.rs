//! What a configuration references: the files validation read, and the
//! effective version (the configuration plus their contents). The watcher,
//! which never parses the configuration, learns from these which files to
//! watch and whether anything it sees changed.
//!
//! Validation also keeps a [`FileSnapshot`]: every read's answer as it was,
//! so that a version can be validated (and applied) again later with
//! exactly the files it had, whatever the disk holds by then (the proxy's
//! return to its last good version).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

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
    reads: Mutex<Reads>,
}

/// What a [`Recording`] saw.
#[derive(Default)]
struct Reads {
    /// The paths named, each once, with their content's version.
    named: Vec<(String, Option<String>)>,
    /// Every answer (outside the roots included), by path.
    answers: BTreeMap<String, Result<Arc<[u8]>, FileError>>,
}

impl<'a> Recording<'a> {
    pub(crate) fn new(inner: &'a dyn FileSource) -> Self {
        Recording {
            inner,
            reads: Mutex::new(Reads::default()),
        }
    }

    /// What was read, for a configuration of version `config_version`, and
    /// the snapshot of every answer.
    pub(crate) fn finish(self, config_version: &ConfigVersion) -> (Referenced, FileSnapshot) {
        let reads = self
            .reads
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let effective_version = effective_version(
            config_version,
            reads.named.iter().map(|(p, v)| (p.as_str(), v.as_deref())),
        );
        let referenced = Referenced {
            files: reads.named.into_iter().map(|(p, _)| p).collect(),
            effective_version,
        };
        let snapshot = FileSnapshot {
            answers: reads.answers,
            loads: self.inner.loads(),
        };
        (referenced, snapshot)
    }

    /// What was read, for a configuration of version `config_version`.
    #[cfg(test)]
    pub(crate) fn referenced(self, config_version: &ConfigVersion) -> Referenced {
        self.finish(config_version).0
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
        if !outside && !reads.named.iter().any(|(p, _)| p == path) {
            let version = result.as_deref().ok().map(sha256_hex);
            reads.named.push((path.to_owned(), version));
        }
        if !reads.answers.contains_key(path) {
            let answer = result.as_deref().map(Arc::from).map_err(Clone::clone);
            reads.answers.insert(path.to_owned(), answer);
        }
        result
    }

    fn loads(&self) -> bool {
        self.inner.loads()
    }
}

/// The files of one validation exactly as it read them: read through it,
/// the same configuration validates to the same material and effective
/// version, whatever the disk holds now. A path that validation never read
/// is [`FileError::NotInSnapshot`].
#[derive(Debug, Clone, Default)]
pub struct FileSnapshot {
    answers: BTreeMap<String, Result<Arc<[u8]>, FileError>>,
    loads: bool,
}

impl FileSource for FileSnapshot {
    fn read(&self, path: &str) -> Result<Vec<u8>, FileError> {
        match self.answers.get(path) {
            Some(Ok(bytes)) => Ok(bytes.to_vec()),
            Some(Err(e)) => Err(e.clone()),
            None => Err(FileError::NotInSnapshot),
        }
    }

    fn loads(&self) -> bool {
        self.loads
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
    fn the_snapshot_answers_as_the_files_were_read() {
        let files = MemoryFiles::default().with("a.pem", b"old");
        let recording = Recording::new(&files);
        let _ = recording.read("a.pem");
        let _ = recording.read("missing.pem");
        let (_, snapshot) = recording.finish(&sluice_volume::config_version(b"c"));
        assert_eq!(snapshot.read("a.pem").unwrap(), b"old");
        assert_eq!(
            snapshot.read("missing.pem"),
            Err(FileError::Read(ReadError::NotFound))
        );
        assert_eq!(snapshot.read("other.pem"), Err(FileError::NotInSnapshot));
        assert!(snapshot.loads());
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
