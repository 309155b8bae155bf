//! `run --persist`: writing an applied configuration back to its file, so a
//! restart comes up with what was last applied.
//!
//! Atomic and durable: the bytes go to a temporary file of a name no other
//! writer uses (created exclusively, beside the file, with the file's
//! permissions), which is synced, renamed over the file, and then the
//! directory is synced so the rename itself survives a crash. The engine
//! calls it inside the reload, before the reload answers, so two reloads
//! persist in the order they applied, and a caller that went away changes
//! nothing.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` as above. When the file already holds these
/// bytes (a SIGHUP reload of it) there is nothing to write. On a read-only
/// filesystem (a Kubernetes ConfigMap volume) it does nothing and says so.
pub(super) fn persist(path: &Path, bytes: &[u8]) {
    if fs::read(path).is_ok_and(|on_disk| on_disk == bytes) {
        tracing::debug!(config = %path.display(), "applied configuration already on disk");
        return;
    }
    match write_atomically(path, bytes) {
        Ok(()) => tracing::info!(config = %path.display(), "applied configuration persisted"),
        Err(e) if read_only(&e) => {
            tracing::info!(config = %path.display(), error = %e, "not persisted: the configuration's directory is read-only");
        }
        Err(e) => {
            tracing::warn!(config = %path.display(), error = %e, "could not persist the applied configuration");
        }
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let (tmp, mut file) = temporary(dir, path)?;
    let written = (|| {
        if let Ok(meta) = fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // The rename is durable only once the directory is.
    File::open(dir)?.sync_all()
}

/// A new file beside `path`, named so no other writer (another reload,
/// another process, a leftover of a crash) can be using it.
fn temporary(dir: &Path, path: &Path) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.{}.{n}.sluice-tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

fn read_only(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leftover_temporary_of_any_name_never_stops_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("proxy.yaml");
        fs::write(&path, b"old").unwrap();
        // What the old fixed name was, and what this process would try first.
        fs::create_dir(dir.path().join(".proxy.yaml.sluice-tmp")).unwrap();
        let first = format!(".proxy.yaml.{}.0.sluice-tmp", std::process::id());
        fs::create_dir(dir.path().join(first)).unwrap();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
    }

    #[cfg(unix)]
    #[test]
    fn the_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("proxy.yaml");
        fs::write(&path, b"old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&path, b"new").unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
    }
}
