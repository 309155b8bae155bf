//! Name resolution a test controls: a hosts file of its own, seen only by
//! the clients it starts, each inside a private mount namespace where the
//! file is bind-mounted over `/etc/hosts` (root). The machine's own files
//! are never touched.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::python;
use sluice_testkit::repo;

/// A hosts file resolving every name it holds to 127.0.0.1.
#[derive(Debug)]
pub struct Hosts {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Hosts {
    /// A hosts file naming `names` (and `localhost`).
    pub fn new(names: &[String]) -> Hosts {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("hosts");
        let text = format!("127.0.0.1 localhost {}\n", names.join(" "));
        std::fs::write(&path, text).expect("write hosts file");
        Hosts { path, _dir: dir }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A command running `tests/clients/<script>` with the virtualenv's
    /// interpreter, resolving names through this file only. `exec` keeps
    /// the PID the client's own, for the socket table.
    pub fn python(&self, script: &str) -> Command {
        let mut cmd = Command::new("unshare");
        cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg("mount --bind \"$0\" /etc/hosts && exec \"$@\"")
            .arg(&self.path)
            .arg(python::interpreter())
            .arg(repo().join("tests/clients").join(script));
        cmd.env("PYTHONUNBUFFERED", "1");
        cmd
    }
}
