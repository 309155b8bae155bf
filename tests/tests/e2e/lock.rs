//! Builds use what the repository pins: `scripts/check-lock` (the test
//! command's first cargo step) passes on the committed Cargo.lock and fails
//! on a stale one, saying how to refresh it, without rewriting it.

use std::process::{Command, Output};

use sluice_testkit::repo;

fn check_lock(manifest: &std::path::Path) -> Output {
    Command::new(repo().join("scripts/check-lock"))
        .arg(manifest)
        .output()
        .expect("run scripts/check-lock")
}

#[test]
fn the_committed_lock_matches_the_workspace() {
    let out = check_lock(&repo().join("Cargo.toml"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_stale_lock_fails_with_how_to_refresh_it_and_is_left_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, deps) in [("app", "lib = { path = \"../lib\" }\n"), ("lib", "")] {
        let crate_dir = dir.path().join(name);
        std::fs::create_dir_all(crate_dir.join("src")).unwrap();
        std::fs::write(crate_dir.join("src/lib.rs"), "").unwrap();
        let workspace = if name == "app" { "[workspace]\n" } else { "" };
        std::fs::write(
            crate_dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
                 {workspace}[dependencies]\n{deps}"
            ),
        )
        .unwrap();
    }
    // A lock made before `lib` became a dependency.
    let lock = "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n";
    let lock_path = dir.path().join("app/Cargo.lock");
    std::fs::write(&lock_path, lock).unwrap();
    let out = check_lock(&dir.path().join("app/Cargo.toml"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is stale"), "{stderr}");
    assert!(stderr.contains("cargo update --workspace"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), lock);
}
