//! Where referenced files (TLS material, the admin token) come from.
//!
//! Validation reads them through [`FileSource`], so it stays free of direct
//! I/O: the proxy and the CLI pass [`LocalFiles`], tests pass [`MemoryFiles`].

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
pub use sluice_volume::file::{FileRoots, MAX_FILE_BYTES, ReadError};
use sluice_volume::sha256_hex;

/// Why a referenced file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// The reader's answer: missing, not a regular file, too large, outside
    /// the allowed roots...
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The source does not read files ([`PathsOnly`]).
    #[error("files are not read by this validator")]
    NotLoaded,
    /// Read from a [`crate::referenced::FileSnapshot`] that does not hold
    /// it: the version it was taken for never read this path.
    #[error("not read when this version was validated")]
    NotInSnapshot,
}

/// Reads files named in the configuration.
pub trait FileSource: Send + Sync {
    /// The whole content of the file at `path`, as written in the configuration.
    fn read(&self, path: &str) -> Result<Vec<u8>, FileError>;

    /// Whether files are read at all. When false, validation checks that
    /// paths are given but not what they hold (see [`PathsOnly`]).
    fn loads(&self) -> bool {
        true
    }
}

/// Validation without the referenced files: for a validator that runs where
/// the proxy's files are not (the admission webhook's pod cannot mount the
/// proxy's Secrets). Paths are checked; contents are not, so a configuration
/// valid under `PathsOnly` may still fail on a proxy whose files are broken.
/// The resulting configuration has no TLS material and cannot be served.
#[derive(Debug, Clone, Copy, Default)]
pub struct PathsOnly;

impl FileSource for PathsOnly {
    fn read(&self, _path: &str) -> Result<Vec<u8>, FileError> {
        Err(FileError::NotLoaded)
    }

    fn loads(&self) -> bool {
        false
    }
}

/// The local filesystem, confined to roots: relative paths are taken from
/// `base` (the directory of the configuration file, so a configuration means
/// the same from any working directory), and a file is read only beneath
/// one of the roots (by default `base` alone), by the rules of
/// [`sluice_volume::file`]. Whoever may edit the configuration may name any
/// path; the roots keep them to the files the operator mounted for it.
#[derive(Debug, Clone)]
pub struct LocalFiles {
    base: PathBuf,
    roots: FileRoots,
}

impl LocalFiles {
    /// Relative paths are resolved against `base`, which is the one root.
    pub fn relative_to(base: impl Into<PathBuf>) -> Self {
        let base = base.into();
        let roots = FileRoots::new([&base]).unwrap_or_default();
        LocalFiles { base, roots }
    }

    /// Relative paths are resolved against the directory holding
    /// `config_file`, which is the one root.
    pub fn beside(config_file: &Path) -> Self {
        Self::relative_to(config_dir(config_file))
    }

    /// For the configuration at `config_file`: relative paths from its
    /// directory, files beneath `roots`, or beneath that directory alone
    /// when `roots` is empty (the proxy's `--file-root`, repeatable).
    pub fn for_config(config_file: &Path, roots: &[PathBuf]) -> std::io::Result<Self> {
        let files = Self::beside(config_file);
        if roots.is_empty() {
            return Ok(files);
        }
        Ok(files.within(FileRoots::new(roots)?))
    }

    /// The same, with files allowed beneath `roots` instead.
    pub fn within(self, roots: FileRoots) -> Self {
        LocalFiles { roots, ..self }
    }

    /// The roots files are read beneath.
    pub fn roots(&self) -> &FileRoots {
        &self.roots
    }
}

/// The directory holding `config_file` (`.` for a bare file name).
pub fn config_dir(config_file: &Path) -> PathBuf {
    match config_file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

impl FileSource for LocalFiles {
    fn read(&self, path: &str) -> Result<Vec<u8>, FileError> {
        Ok(self.roots.read(&self.base.join(path), MAX_FILE_BYTES)?)
    }
}

/// Files held in memory, keyed by the path as written in the configuration.
#[derive(Debug, Clone, Default)]
pub struct MemoryFiles(BTreeMap<String, Vec<u8>>);

impl MemoryFiles {
    /// Adds a file.
    pub fn with(mut self, path: impl Into<String>, content: impl Into<Vec<u8>>) -> Self {
        self.0.insert(path.into(), content.into());
        self
    }
}

impl FileSource for MemoryFiles {
    fn read(&self, path: &str) -> Result<Vec<u8>, FileError> {
        self.0
            .get(path)
            .cloned()
            .ok_or(FileError::Read(ReadError::NotFound))
    }
}

/// A file the configuration refers to, with a digest of its content so a
/// rotated certificate counts as a change even when its path does not.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct FileRef {
    /// The path as written in the configuration.
    pub path: String,
    /// `sha256:<hex>` of the content read during validation.
    pub digest: String,
}

impl FileRef {
    pub(crate) fn new(path: &str, content: &[u8]) -> Self {
        FileRef {
            path: path.to_owned(),
            digest: sha256_hex(content),
        }
    }

    /// A file named but not read ([`PathsOnly`]).
    pub fn unread(path: &str) -> Self {
        FileRef {
            path: path.to_owned(),
            digest: "unread".to_owned(),
        }
    }
}

/// Reads a configuration file, at most one byte over the size limit (the
/// validator reports the excess); a failure is an I/O problem. Like every
/// referenced file, it must be a regular file (a FIFO would block forever);
/// it is where the operator said, so no root applies.
pub fn read_config(path: &Path) -> std::io::Result<Vec<u8>> {
    match sluice_volume::read_regular(path, crate::MAX_CONFIG_BYTES as u64) {
        Ok(bytes) => Ok(bytes),
        // One byte over the limit is read so the validator reports it.
        Err(ReadError::TooLarge(_)) => {
            let mut bytes = Vec::new();
            std::fs::File::open(path)?
                .take(crate::MAX_CONFIG_BYTES as u64 + 1)
                .read_to_end(&mut bytes)?;
            Ok(bytes)
        }
        Err(ReadError::NotFound) => Err(std::io::ErrorKind::NotFound.into()),
        Err(ReadError::PermissionDenied) => Err(std::io::ErrorKind::PermissionDenied.into()),
        Err(e) => Err(std::io::Error::other(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn not_a_file() -> FileError {
        FileError::Read(ReadError::NotAFile)
    }

    #[test]
    fn a_fifo_is_refused_at_once_instead_of_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("cert.pem");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // Through a symlink too, as in a Secret volume.
        std::os::unix::fs::symlink(&fifo, dir.path().join("link.pem")).unwrap();
        let files = LocalFiles::relative_to(dir.path());
        assert_eq!(files.read("cert.pem").unwrap_err(), not_a_file());
        assert_eq!(files.read("link.pem").unwrap_err(), not_a_file());
        let e = read_config(&fifo).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file");
    }

    #[test]
    fn a_config_one_byte_over_the_limit_is_read_for_the_validator_to_report() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.yaml");
        std::fs::write(&big, vec![b'#'; crate::MAX_CONFIG_BYTES + 100]).unwrap();
        assert_eq!(
            read_config(&big).unwrap().len(),
            crate::MAX_CONFIG_BYTES + 1
        );
    }

    #[test]
    fn local_files_resolve_relative_paths_and_refuse_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.pem"), b"x").unwrap();
        let files = LocalFiles::relative_to(dir.path());
        assert_eq!(files.read("a.pem").unwrap(), b"x");
        assert_eq!(
            files.read("missing.pem").unwrap_err(),
            FileError::Read(ReadError::NotFound)
        );
        assert_eq!(
            files.read(dir.path().to_str().unwrap()).unwrap_err(),
            not_a_file()
        );
    }

    #[test]
    fn local_files_read_beneath_their_roots_only() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        let tls = dir.path().join("tls");
        std::fs::create_dir(&config).unwrap();
        std::fs::create_dir(&tls).unwrap();
        std::fs::write(tls.join("tls.crt"), b"cert").unwrap();
        let beside = LocalFiles::beside(&config.join("proxy.yaml"));
        let outside = FileError::Read(ReadError::OutsideRoots);
        let absolute = tls.join("tls.crt");
        let absolute = absolute.to_str().unwrap();
        for path in ["../tls/tls.crt", absolute, "/etc/hostname", "../tls/none"] {
            assert_eq!(beside.read(path).unwrap_err(), outside, "{path}");
        }
        let both = beside.within(FileRoots::new([&config, &tls]).unwrap());
        assert_eq!(both.read("../tls/tls.crt").unwrap(), b"cert");
        assert_eq!(both.read(absolute).unwrap(), b"cert");
        assert_eq!(both.read("/etc/hostname").unwrap_err(), outside);
    }
}
