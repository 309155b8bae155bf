//! Where referenced files (TLS material, the admin token) come from.
//!
//! Validation reads them through [`FileSource`], so it stays free of direct
//! I/O: the proxy and the CLI pass [`LocalFiles`], tests pass [`MemoryFiles`].

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sluice_volume::sha256_hex;

/// Largest referenced file read (a certificate bundle is a few KiB).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Why a referenced file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// Nothing exists at the path.
    #[error("no such file")]
    NotFound,
    /// The proxy's user may not read it.
    #[error("permission denied")]
    PermissionDenied,
    /// It is a directory, a FIFO, a device: anything but a regular file.
    #[error("not a regular file")]
    NotAFile,
    /// It is larger than [`MAX_FILE_BYTES`].
    #[error("larger than {MAX_FILE_BYTES} bytes")]
    TooLarge,
    /// The source does not read files ([`PathsOnly`]).
    #[error("files are not read by this validator")]
    NotLoaded,
    /// Any other I/O error, by its description.
    #[error("{0}")]
    Io(String),
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

/// The local filesystem; relative paths are taken from `base` (the directory
/// of the configuration file), so a config means the same from any working
/// directory.
#[derive(Debug, Clone, Default)]
pub struct LocalFiles {
    base: Option<PathBuf>,
}

impl LocalFiles {
    /// Relative paths are resolved against `base`.
    pub fn relative_to(base: impl Into<PathBuf>) -> Self {
        LocalFiles {
            base: Some(base.into()),
        }
    }

    /// Relative paths are resolved against the directory holding `config_file`.
    pub fn beside(config_file: &Path) -> Self {
        match config_file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => Self::relative_to(dir),
            _ => Self::default(),
        }
    }

    fn resolve(&self, path: &str) -> PathBuf {
        match &self.base {
            Some(base) if Path::new(path).is_relative() => base.join(path),
            _ => PathBuf::from(path),
        }
    }
}

impl FileSource for LocalFiles {
    fn read(&self, path: &str) -> Result<Vec<u8>, FileError> {
        read_regular(&self.resolve(path), MAX_FILE_BYTES)
    }
}

/// Reads a regular file of at most `limit` bytes. Anything else (a FIFO, a
/// device, a directory) is refused before it is opened: opening a FIFO for
/// reading blocks until a writer comes, and would hold a reload, or `check`,
/// forever. The check follows symlinks (Secret volume files are symlinks
/// into `..data`), and is made again on the opened file, which is opened
/// without blocking, so a file swapped for a FIFO in between is refused too.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    if !std::fs::metadata(path).map_err(io_error)?.is_file() {
        return Err(FileError::NotAFile);
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io_error)?;
    if !file.metadata().map_err(io_error)?.is_file() {
        return Err(FileError::NotAFile);
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge);
    }
    Ok(bytes)
}

fn io_error(e: std::io::Error) -> FileError {
    match e.kind() {
        std::io::ErrorKind::NotFound => FileError::NotFound,
        std::io::ErrorKind::PermissionDenied => FileError::PermissionDenied,
        std::io::ErrorKind::IsADirectory => FileError::NotAFile,
        _ => FileError::Io(e.to_string()),
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
        self.0.get(path).cloned().ok_or(FileError::NotFound)
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
    pub(crate) fn unread(path: &str) -> Self {
        FileRef {
            path: path.to_owned(),
            digest: "unread".to_owned(),
        }
    }
}

/// Reads a configuration file, at most one byte over the size limit (the
/// validator reports the excess); a failure is an I/O problem. Like every
/// referenced file, it must be a regular file (a FIFO would block forever).
pub fn read_config(path: &Path) -> std::io::Result<Vec<u8>> {
    match read_regular(path, crate::MAX_CONFIG_BYTES as u64) {
        Ok(bytes) => Ok(bytes),
        // One byte over the limit is read so the validator reports it.
        Err(FileError::TooLarge) => {
            let mut bytes = Vec::new();
            std::fs::File::open(path)?
                .take(crate::MAX_CONFIG_BYTES as u64 + 1)
                .read_to_end(&mut bytes)?;
            Ok(bytes)
        }
        Err(FileError::NotFound) => Err(std::io::ErrorKind::NotFound.into()),
        Err(FileError::PermissionDenied) => Err(std::io::ErrorKind::PermissionDenied.into()),
        Err(e) => Err(std::io::Error::other(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(files.read("cert.pem").unwrap_err(), FileError::NotAFile);
        assert_eq!(files.read("link.pem").unwrap_err(), FileError::NotAFile);
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
        assert_eq!(files.read("missing.pem").unwrap_err(), FileError::NotFound);
        assert_eq!(
            files.read(dir.path().to_str().unwrap()).unwrap_err(),
            FileError::NotAFile
        );
    }
}
