//! One definition of valid: `sluice-proxy check` (the real binary) gives, for
//! every file of the invalid corpus, exactly the errors the library gives.
//! The webhook and the admin API join this test as they arrive. The corpus
//! reaches shared files with `..`: the repository is the one allowed root.

use std::process::Command;

use sluice_testkit::{bin, corpus, repo};

#[test]
fn check_cli_reports_exactly_the_corpus_errors() {
    let corpus = corpus::invalid();
    assert!(corpus.len() >= 40);
    let files: Vec<String> = corpus
        .iter()
        .map(|(f, _)| f.strip_prefix(repo()).unwrap().display().to_string())
        .collect();
    let out = Command::new(bin("sluice-proxy"))
        .args(["check", "--file-root", "."])
        .args(&files)
        .current_dir(repo())
        .output()
        .expect("run sluice-proxy check");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).expect("utf-8 output");
    let mut want = Vec::new();
    for (file, (_, expected)) in files.iter().zip(&corpus) {
        want.extend(expected.iter().map(|e| {
            // Errors without a position print as `file: message`.
            if e.starts_with(|c: char| c.is_ascii_digit()) {
                format!("{file}:{e}")
            } else {
                format!("{file}: {e}")
            }
        }));
        let n = expected.len();
        want.push(format!(
            "{file}: invalid, {n} error{}",
            if n == 1 { "" } else { "s" }
        ));
    }
    let got: Vec<&str> = stdout.lines().collect();
    assert_eq!(got, want);
}
