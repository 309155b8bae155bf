//! The configuration fixtures: `tests/fixtures/config/invalid` holds every
//! validation rule as a `.yaml` beside its `.expected` errors (one
//! `line:column: path: message` per line); `tests/fixtures/config/valid`
//! and `examples/` hold configurations that must pass. The validator, the
//! CLI, the admin API and the webhook are all held to the same files.

use std::path::{Path, PathBuf};

use crate::repo;

/// The invalid corpus's directory.
pub fn invalid_dir() -> PathBuf {
    repo().join("tests/fixtures/config/invalid")
}

/// The valid fixtures' directory.
pub fn valid_dir() -> PathBuf {
    repo().join("tests/fixtures/config/valid")
}

/// The `.yaml` files of `dir`, sorted.
pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// The expected errors of an invalid file: its `.expected` twin's lines.
pub fn expected(file: &Path) -> Vec<String> {
    let path = file.with_extension("expected");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The invalid corpus: each file with its expected errors.
pub fn invalid() -> Vec<(PathBuf, Vec<String>)> {
    yaml_files(&invalid_dir())
        .into_iter()
        .map(|f| {
            let expected = expected(&f);
            (f, expected)
        })
        .collect()
}
