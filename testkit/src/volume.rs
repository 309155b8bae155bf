//! A ConfigMap or Secret volume on disk, written exactly the way kubelet's
//! AtomicWriter does: each version in a new `..<timestamp>` directory, a
//! `..data_tmp` symlink to it renamed over `..data`, the old directory
//! removed; each visible file is a symlink such as
//! `proxy.yaml -> ..data/proxy.yaml`.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A volume directory: a ConfigMap's or a Secret's keys.
#[derive(Debug)]
pub struct Volume {
    dir: PathBuf,
    keys: Vec<String>,
    current: Option<String>,
}

impl Volume {
    /// Creates the layout in `dir` with a first version of `key`.
    pub fn create(dir: &Path, key: &str, content: &[u8]) -> Volume {
        Self::create_files(dir, &[(key, content)])
    }

    /// Creates the layout in `dir` with a first version of several keys
    /// (a Secret's `tls.crt` and `tls.key`, say).
    pub fn create_files(dir: &Path, files: &[(&str, &[u8])]) -> Volume {
        let mut v = Volume {
            dir: dir.to_path_buf(),
            keys: files.iter().map(|(k, _)| (*k).to_owned()).collect(),
            current: None,
        };
        v.swap_files(files);
        for key in &v.keys {
            symlink(format!("..data/{key}"), dir.join(key)).expect("key symlink");
        }
        v
    }

    /// The path a pod reads for the first key: `<dir>/<key>`.
    pub fn path(&self) -> PathBuf {
        self.file(&self.keys[0])
    }

    /// The path a pod reads for `key`.
    pub fn file(&self, key: &str) -> PathBuf {
        self.dir.join(key)
    }

    /// Publishes a new version of the first key atomically, as kubelet does.
    pub fn swap(&mut self, content: &[u8]) {
        let key = self.keys[0].clone();
        self.swap_files(&[(&key, content)]);
    }

    /// Publishes a new version of every key atomically, as kubelet does;
    /// a key new to the volume gets its symlink after the swap, as kubelet
    /// gives it.
    pub fn swap_files(&mut self, files: &[(&str, &[u8])]) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let secs = now.as_secs();
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (y, m, d) = civil_from_days(days as i64);
        // Nanoseconds keep names unique even within one clock tick.
        let nanos = now.subsec_micros() * 1000 + SEQ.fetch_add(1, Ordering::Relaxed) % 1000;
        let name = format!(
            "..{y:04}_{m:02}_{d:02}_{:02}_{:02}_{:02}.{nanos:09}",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        );
        let ts_dir = self.dir.join(&name);
        std::fs::create_dir(&ts_dir).expect("timestamp dir");
        for (key, content) in files {
            std::fs::write(ts_dir.join(key), content).expect("write content");
        }
        let tmp = self.dir.join("..data_tmp");
        symlink(&name, &tmp).expect("..data_tmp");
        std::fs::rename(&tmp, self.dir.join("..data")).expect("rename over ..data");
        let created = self.current.is_some();
        if let Some(old) = self.current.replace(name) {
            std::fs::remove_dir_all(self.dir.join(old)).expect("remove old version");
        }
        for (key, _) in files {
            if created && !self.keys.iter().any(|k| k == key) {
                symlink(format!("..data/{key}"), self.dir.join(key)).expect("new key symlink");
                self.keys.push((*key).to_owned());
            }
        }
    }
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}
