//! Offline parity: every file of the invalid-config corpus, wrapped in a
//! ConfigMap AdmissionReview, is denied by the webhook with exactly the
//! errors `sluice-proxy check` prints for it (the real binary) and
//! its `.expected` twin lists, which the CLI and admin API tests hold too.
//! The corpus reaches shared files with `..`: both read them with the
//! repository as the one allowed root (`--file-root`).

use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_testkit::{bin, corpus, repo};

use super::harness::{Pki, Webhook, review_with};

fn invalid_files() -> (PathBuf, Vec<PathBuf>) {
    let dir = corpus::invalid_dir();
    let files = corpus::yaml_files(&dir);
    assert!(files.len() >= 40, "{} files", files.len());
    (dir, files)
}

/// `line:col: path: message` as the webhook prints it for `proxy.yaml`.
fn in_proxy_yaml(expected: &str) -> String {
    if expected.starts_with(|c: char| c.is_ascii_digit()) {
        format!("proxy.yaml:{expected}")
    } else {
        format!("proxy.yaml: {expected}")
    }
}

/// What `sluice-proxy check FILE [--paths-only]` prints per error, with the
/// file name replaced by `proxy.yaml`; `None` when it finds the file valid.
fn cli_errors(file: &Path, paths_only: bool) -> Option<Vec<String>> {
    let name = file.display().to_string();
    // The real binary (`scripts/test` builds every binary first).
    let proxy = bin("sluice-proxy");
    let mut cmd = Command::new(&proxy);
    cmd.arg("check").arg(&name).arg("--file-root").arg(repo());
    if paths_only {
        cmd.arg("--paths-only");
    }
    let run = cmd
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", proxy.display()));
    let out = String::from_utf8(run.stdout).expect("utf-8 output");
    if out.starts_with(&format!("{name}: valid, ")) {
        return None;
    }
    let summary = format!("{name}: invalid, ");
    Some(
        out.lines()
            .filter(|l| !l.starts_with(&summary))
            .map(|l| {
                format!(
                    "proxy.yaml{}",
                    l.strip_prefix(&name).expect("file name first")
                )
            })
            .collect(),
    )
}

/// The error lines of a denial (after its header), or `None` if allowed.
fn denial_lines(answer: &serde_json::Value) -> Option<Vec<String>> {
    let r = &answer["response"];
    if r["allowed"] == true {
        return None;
    }
    let message = r["status"]["message"].as_str().expect("a message");
    Some(message.lines().skip(1).map(str::to_owned).collect())
}

#[tokio::test]
async fn the_corpus_is_denied_with_exactly_the_cli_errors() {
    let (dir, files) = invalid_files();
    let pki = Pki::new();
    let root = dir.to_str().expect("utf-8 path");
    let webhook = Webhook::start(
        &pki.cert,
        &pki.key,
        &pki.ca.pem,
        &[
            "--check-files",
            "--files-root",
            root,
            "--file-root",
            &repo().display().to_string(),
            "--max-errors",
            "0",
        ],
    );
    for file in &files {
        let yaml = std::fs::read(file).expect("read corpus file");
        let expected: Vec<String> = corpus::expected(file)
            .iter()
            .map(|e| in_proxy_yaml(e))
            .collect();
        let (status, answer) = webhook.review(review_with(&yaml)).await;
        assert_eq!(status, 200, "{}", file.display());
        let r = &answer["response"];
        assert_eq!(r["allowed"], false, "{}", file.display());
        let message = r["status"]["message"].as_str().expect("a message");
        let mut lines = message.lines();
        let header = lines.next().expect("a header");
        assert!(
            header.ends_with(&format!(
                "({} error{}):",
                expected.len(),
                if expected.len() == 1 { "" } else { "s" }
            )),
            "{}: {header}",
            file.display()
        );
        let got: Vec<&str> = lines.collect();
        assert_eq!(got, expected, "{}", file.display());
        assert_eq!(
            cli_errors(file, false),
            Some(expected),
            "CLI: {}",
            file.display()
        );
    }
    webhook.assert_clean_logs(&[]);
}

/// The webhook's default (files named, not read) against `check --paths-only`.
#[tokio::test]
async fn without_file_checks_the_webhook_matches_check_paths_only() {
    let (_, files) = invalid_files();
    let pki = Pki::new();
    let webhook = Webhook::start(&pki.cert, &pki.key, &pki.ca.pem, &["--max-errors", "0"]);
    let mut allowed = 0;
    for file in &files {
        let yaml = std::fs::read(file).expect("read corpus file");
        let (status, answer) = webhook.review(review_with(&yaml)).await;
        assert_eq!(status, 200, "{}", file.display());
        let got = denial_lines(&answer);
        allowed += usize::from(got.is_none());
        assert_eq!(got, cli_errors(file, true), "{}", file.display());
    }
    // Files whose only problem is a file's content pass without file checks.
    assert!(
        allowed > 0 && allowed < files.len() / 2,
        "{allowed} allowed"
    );
    webhook.assert_clean_logs(&[]);
}

#[tokio::test]
async fn the_default_cap_lists_twenty_errors() {
    let (dir, _) = invalid_files();
    let many = dir.join("69-many-errors.yaml");
    let expected = std::fs::read_to_string(many.with_extension("expected")).expect("expected");
    assert_eq!(expected.lines().count(), 20);
    let pki = Pki::new();
    let root = dir.to_str().expect("utf-8 path");
    let webhook = Webhook::start(
        &pki.cert,
        &pki.key,
        &pki.ca.pem,
        &[
            "--check-files",
            "--files-root",
            root,
            "--file-root",
            &repo().display().to_string(),
        ],
    );
    let (_, answer) = webhook
        .review(review_with(&std::fs::read(&many).expect("read")))
        .await;
    let message = answer["response"]["status"]["message"]
        .as_str()
        .expect("a message");
    assert_eq!(message.lines().count(), 21, "{message}");
    assert!(!message.contains("more error"));

    let capped = Webhook::start(&pki.cert, &pki.key, &pki.ca.pem, &["--max-errors", "5"]);
    let (_, answer) = capped
        .review(review_with(&std::fs::read(&many).expect("read")))
        .await;
    let message = answer["response"]["status"]["message"]
        .as_str()
        .expect("a message");
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(lines.len(), 7, "{message}");
    assert_eq!(lines[6], "and 15 more errors");
    let first: Vec<String> = expected.lines().take(5).map(in_proxy_yaml).collect();
    assert_eq!(lines[1..6], first[..]);
}
