//! The configuration corpus: every file under `tests/fixtures/config/invalid`
//! must fail with exactly the errors in its `.expected` twin, and every file
//! under `tests/fixtures/config/valid` and `examples/` must pass.
//!
//! The fixtures reach shared files with `..` (`../files`, `examples/certs`):
//! they are read with the repository as the one allowed root.
//!
//! `SLUICE_BLESS=1 cargo test -p sluice-config --test validator corpus` rewrites the
//! `.expected` files; review the diff before committing it.

use std::path::Path;

use sluice_config::read_config;
use sluice_config::{FileRoots, LocalFiles, validate};
use sluice_testkit::corpus::{self, yaml_files};
use sluice_testkit::repo;

fn errors_of(path: &Path) -> Vec<String> {
    let bytes = read_config(path).expect("fixture is readable");
    let roots = FileRoots::new([repo()]).expect("the repository's path");
    match validate(&bytes, &LocalFiles::beside(path).within(roots)) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn every_invalid_config_fails_with_exactly_its_expected_errors() {
    let bless = std::env::var_os("SLUICE_BLESS").is_some();
    let files = yaml_files(&corpus::invalid_dir());
    assert!(
        files.len() >= 40,
        "the corpus holds {} invalid configs",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let actual = errors_of(file);
        let expected_path = file.with_extension("expected");
        if bless {
            let mut text = actual.join("\n");
            text.push('\n');
            std::fs::write(&expected_path, text).expect("write .expected");
            continue;
        }
        let expected = corpus::expected(file);
        if actual.is_empty() {
            failures.push(format!("{}: validated, but must fail", file.display()));
        } else if actual != expected {
            failures.push(format!(
                "{}:\n  expected:\n    {}\n  actual:\n    {}",
                file.display(),
                expected.join("\n    "),
                actual.join("\n    ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_valid_config_and_example_passes() {
    let mut files = yaml_files(&corpus::valid_dir());
    let examples = yaml_files(&repo().join("examples"));
    assert!(
        examples.len() >= 3,
        "examples/ holds {} configs",
        examples.len()
    );
    files.extend(examples);
    assert!(files.len() >= 5);
    for file in &files {
        let errors = errors_of(file);
        assert!(
            errors.is_empty(),
            "{}:\n{}",
            file.display(),
            errors.join("\n")
        );
    }
}
