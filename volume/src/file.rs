//! The one reader of the files a configuration references (TLS material,
//! SASL credentials, the admin token), with one set of rules for the proxy,
//! the webhook and the watcher, so that both sides of the effective-version
//! comparison read the same bytes:
//!
//! - only a regular file is read, checked before it is opened and again on
//!   the opened descriptor; it is opened with `O_NONBLOCK`, so a FIFO (which
//!   would block until a writer comes) never holds a reload or `check`;
//! - at most [`MAX_FILE_BYTES`];
//! - with [`FileRoots`], only beneath the directories the operator named:
//!   a path (absolute or with `..`) that leaves every root is refused with
//!   one answer whatever is there, and so is a symlink whose target leaves
//!   them; symlinks inside a root are followed, as a Secret volume needs
//!   (`key -> ..data/key`, `..data -> ..2024_…`).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Largest referenced file read (a certificate bundle is a few KiB; a
/// ConfigMap or a Secret holds at most 1 MiB).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Why a referenced file could not be read. The message never quotes the
/// file's content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Nothing exists at the path.
    #[error("no such file")]
    NotFound,
    /// The reader's user may not read it.
    #[error("permission denied")]
    PermissionDenied,
    /// A directory, a FIFO, a device: anything but a regular file.
    #[error("not a regular file")]
    NotAFile,
    /// Larger than the limit, in bytes.
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    /// Not beneath any of the allowed roots, by its path or by where its
    /// symlinks lead. The same answer whether or not anything exists there.
    #[error("outside the allowed file roots")]
    OutsideRoots,
    /// Any other I/O error, by its description.
    #[error("{0}")]
    Io(String),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => ReadError::NotFound,
            std::io::ErrorKind::PermissionDenied => ReadError::PermissionDenied,
            std::io::ErrorKind::IsADirectory | std::io::ErrorKind::NotADirectory => {
                ReadError::NotAFile
            }
            _ => ReadError::Io(e.to_string()),
        }
    }
}

impl From<rustix::io::Errno> for ReadError {
    fn from(e: rustix::io::Errno) -> Self {
        if e == rustix::io::Errno::LOOP {
            // A component opened without following links was a link: the
            // tree changed between its resolution and the open.
            return ReadError::Io("the path changed while it was read".to_owned());
        }
        std::io::Error::from(e).into()
    }
}

/// Reads the regular file at `path` (symlinks followed), at most `limit`
/// bytes, wherever it is: for a file the operator named on the command line
/// (the configuration) and for the watcher, which reads only what the proxy
/// named after confining it to its roots.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // Before opening: opening a device may have effects of its own.
    if !std::fs::metadata(path)?.is_file() {
        return Err(ReadError::NotAFile);
    }
    let flags = OFlags::NONBLOCK | OFlags::NOCTTY;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?;
    read_open(file, limit)
}

/// The directories referenced files must lie beneath. The default has
/// none: nothing can be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileRoots {
    /// Absolute and lexically normal (no `.`, no `..`).
    dirs: Vec<PathBuf>,
}

impl FileRoots {
    /// The roots `dirs`; relative ones are taken from the working directory.
    pub fn new<P: AsRef<Path>>(dirs: impl IntoIterator<Item = P>) -> std::io::Result<Self> {
        let dirs = dirs
            .into_iter()
            .map(|d| std::path::absolute(d.as_ref()).map(|d| normal(&d)))
            .collect::<std::io::Result<_>>()?;
        Ok(FileRoots { dirs })
    }

    /// The roots, absolute.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Reads the regular file at `path` (relative paths are taken from the
    /// working directory: callers join their own base first), at most
    /// `limit` bytes, if it lies beneath a root, by its path and by its
    /// target once every symlink is followed.
    ///
    /// The opened file is the one checked: the canonical path is opened
    /// from the root's directory one component at a time, none of them
    /// followed if it is a symlink, so a link swapped in after the check is
    /// refused rather than followed out of the root.
    pub fn read(&self, path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
        let lexical = normal(&std::path::absolute(path)?);
        // No file system access before this check: a path outside every
        // root gets one answer, whatever exists there.
        if !self.dirs.iter().any(|root| lexical.starts_with(root)) {
            return Err(ReadError::OutsideRoots);
        }
        let real = std::fs::canonicalize(path)?;
        for root in &self.dirs {
            let Ok(real_root) = std::fs::canonicalize(root) else {
                continue;
            };
            if let Ok(rest) = real.strip_prefix(&real_root) {
                return read_beneath(&real_root, rest, limit);
            }
        }
        Err(ReadError::OutsideRoots)
    }
}

/// Flags of a directory opened only to walk through it.
#[cfg(any(target_os = "linux", target_os = "android"))]
const DIR_FLAGS: OFlags = OFlags::PATH
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Opens `rest` (canonical: no symlink, no `..`) from the directory `root`,
/// following no symlink, and reads it.
fn read_beneath(root: &Path, rest: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let names: Vec<&std::ffi::OsStr> = rest
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(ReadError::OutsideRoots),
        })
        .collect::<Result<_, _>>()?;
    let Some((file, dirs)) = names.split_last() else {
        // The root itself.
        return Err(ReadError::NotAFile);
    };
    let mut dir = rustix::fs::open(root, DIR_FLAGS, Mode::empty())?;
    for name in dirs {
        dir = rustix::fs::openat(&dir, *name, DIR_FLAGS, Mode::empty())?;
    }
    // Before opening: opening a device may have effects of its own.
    let stat = rustix::fs::statat(&dir, *file, AtFlags::SYMLINK_NOFOLLOW)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(ReadError::NotAFile);
    }
    let flags =
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dir, *file, flags, Mode::empty())?;
    read_open(std::fs::File::from(fd), limit)
}

/// Reads an opened file if it is a regular file of at most `limit` bytes.
fn read_open(file: std::fs::File, limit: u64) -> Result<Vec<u8>, ReadError> {
    if !file.metadata()?.is_file() {
        return Err(ReadError::NotAFile);
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(bytes)
}

/// `path` (absolute) without `.` and with each `..` taking away the
/// component before it, as written: no symlink is looked at.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests;
