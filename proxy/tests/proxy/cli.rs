//! `sluice-proxy check` and `diff`, run as the real binary.

use std::process::{Command, Output};

use sluice_testkit::repo;

fn proxy(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice-proxy"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run sluice-proxy")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn check_accepts_valid_files_with_exit_zero() {
    let o = proxy(&["check", "examples/minimal.yaml", "examples/tls.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("examples/minimal.yaml: valid, 1 virtual cluster, sha256:"),
        "{out}"
    );
    assert!(
        out.contains("examples/tls.yaml: valid, 1 virtual cluster, sha256:"),
        "{out}"
    );
}

#[test]
fn check_prints_every_error_as_file_line_column_path_message() {
    let file = "tests/fixtures/config/invalid/69-many-errors.yaml";
    let o = proxy(&["check", "examples/minimal.yaml", file]);
    assert_eq!(o.status.code(), Some(1));
    let expected =
        std::fs::read_to_string(repo().join(file.replace(".yaml", ".expected"))).unwrap();
    let mut want: Vec<String> = expected.lines().map(|l| format!("{file}:{l}")).collect();
    want.push(format!("{file}: invalid, {} errors", want.len()));
    let out = stdout(&o);
    let got: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(got, want);
}

#[test]
fn check_json_reports_each_file() {
    let o = proxy(&[
        "check",
        "--format",
        "json",
        "examples/minimal.yaml",
        "tests/fixtures/config/invalid/31-bootstrap-port-conflict.yaml",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(doc["valid"], false);
    assert_eq!(doc["files"][0]["valid"], true);
    assert_eq!(doc["files"][0]["virtualClusters"][0], "demo");
    assert!(
        doc["files"][0]["configVersion"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let error = &doc["files"][1]["errors"][0];
    assert_eq!(error["path"], "virtualClusters[1].gateway.bootstrapPort");
    assert_eq!(error["line"], 17);
    assert_eq!(error["column"], 22);
    assert_eq!(
        error["message"],
        "port 19092 is already used by virtual cluster \"orders\""
    );
}

#[test]
fn check_exits_two_when_a_file_cannot_be_read() {
    let o = proxy(&["check", "examples/minimal.yaml", "no/such/file.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no/such/file.yaml: cannot read"),
        "{}",
        stderr(&o)
    );
    let o = proxy(&["check"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "missing arguments are a usage error"
    );
}

#[test]
fn check_rejects_oversized_files_without_reading_them_whole() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.yaml");
    let mut text = String::from("# padding\n");
    while text.len() <= 1024 * 1024 {
        text.push_str("# .........................................................\n");
    }
    std::fs::write(&big, text).unwrap();
    let o = proxy(&["check", big.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o)
            .contains("file is larger than 1048576 bytes (1 MiB, the size limit of a ConfigMap)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn diff_shows_what_a_reload_would_do() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.yaml");
    let new = dir.path().join("new.yaml");
    std::fs::copy(repo().join("examples/multi-cluster.yaml"), &old).unwrap();
    let text = std::fs::read_to_string(&old)
        .unwrap()
        .replace("maxConnections: 2000", "maxConnections: 3000")
        .replace("drainTimeout: 20s", "drainTimeout: 10s");
    std::fs::write(&new, text).unwrap();
    let o = proxy(&["diff", old.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "^ orders: applies in place (TLS material, credentials, limits, filters), connections stay\n    limits.maxConnections changed from 2000 to 3000\n= payments: unchanged, not touched\n* drainTimeout changed from 20s to 10s\n"
    );

    let o = proxy(&[
        "diff",
        "--format",
        "json",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(doc["changed"], true);
    assert_eq!(doc["changes"]["rotated"][0]["name"], "orders");
    assert_eq!(doc["changes"]["unchanged"][0], "payments");

    let o = proxy(&["diff", old.to_str().unwrap(), old.to_str().unwrap()]);
    assert_eq!(stdout(&o), "identical: a reload would do nothing\n");
}

#[test]
fn diff_refuses_an_invalid_side() {
    let o = proxy(&[
        "diff",
        "examples/minimal.yaml",
        "tests/fixtures/config/invalid/23-port-zero.yaml",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("23-port-zero.yaml:9:22: virtualClusters[0].gateway.bootstrapPort: port 0 is out of range 1-65535"));
    assert!(stdout(&o).is_empty());
}

#[test]
fn help_explains_exit_statuses_and_formats() {
    let o = proxy(&["check", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = stdout(&o);
    assert!(help.contains("0 all valid, 1 any invalid, 2"), "{help}");
    assert!(help.contains("--format"), "{help}");
    assert!(help.contains("SLUICE_FORMAT"), "{help}");
}

#[test]
fn check_refuses_plain_without_tls_and_diff_never_shows_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old/p.yaml"), dir.path().join("new/p.yaml"));
    let yaml = "virtualClusters:\n  - name: orders\n    upstream:\n      bootstrapServers: [kafka:9092]\n      sasl: { mechanism: SCRAM-SHA-512, usernameFile: user, passwordFile: pass }\n    gateway:\n      advertisedHost: proxy.local\n      bootstrapPort: 19092\n      brokerPorts: { start: 19093, count: 3 }\n";
    for (file, password) in [(&old, "first-pw-1f0e"), (&new, "second-pw-77aa")] {
        let dir = file.parent().unwrap();
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(file, yaml).unwrap();
        std::fs::write(dir.join("user"), "proxy\n").unwrap();
        std::fs::write(dir.join("pass"), format!("{password}\n")).unwrap();
    }
    let o = proxy(&["check", old.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let plain = dir.path().join("old/plain.yaml");
    std::fs::write(&plain, yaml.replace("SCRAM-SHA-512", "PLAIN")).unwrap();
    let o = proxy(&["check", plain.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("5:26: virtualClusters[0].upstream.sasl.mechanism: PLAIN sends the password in clear text: it needs upstream.tls"),
        "{}",
        stdout(&o)
    );
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());
    let text = proxy(&["diff", old, new]);
    assert_eq!(
        stdout(&text),
        "^ orders: applies in place (TLS material, credentials, limits, filters), connections stay\n    upstream.sasl.passwordFile content changed\n"
    );
    let json = proxy(&["diff", "--format", "json", old, new]);
    for o in [&text, &json] {
        let all = format!("{}{}", stdout(o), stderr(o));
        assert!(
            !all.contains("first-pw") && !all.contains("second-pw"),
            "{all}"
        );
    }
}

/// Referenced files are read beneath the configuration's directory, or the
/// `--file-root`s (also `SLUICE_FILE_ROOTS`, comma-separated): a path that
/// leaves them gets one answer whether or not the file exists.
#[test]
fn check_reads_referenced_files_beneath_the_file_roots_only() {
    let dir = tempfile::tempdir().unwrap();
    let (config_dir, secret) = (dir.path().join("config"), dir.path().join("secret"));
    std::fs::create_dir(&config_dir).unwrap();
    std::fs::create_dir(&secret).unwrap();
    std::fs::write(secret.join("user"), "proxy\n").unwrap();
    std::fs::write(secret.join("pass"), "pw-5d1c\n").unwrap();
    let file = config_dir.join("proxy.yaml");
    let yaml = "virtualClusters:\n  - name: orders\n    upstream:\n      bootstrapServers: [kafka:9092]\n      sasl: { mechanism: SCRAM-SHA-512, usernameFile: ../secret/user, passwordFile: PASS }\n    gateway:\n      advertisedHost: proxy.local\n      bootstrapPort: 19092\n      brokerPorts: { start: 19093, count: 3 }\n";
    let pass = secret.join("pass");
    std::fs::write(&file, yaml.replace("PASS", pass.to_str().unwrap())).unwrap();
    let file = file.to_str().unwrap();
    let o = proxy(&["check", file]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let outside = |field: &str, path: &str| {
        format!("{field}: cannot read \"{path}\": outside the allowed file roots")
    };
    let out = stdout(&o);
    assert!(
        out.contains(&outside("usernameFile", "../secret/user")),
        "{out}"
    );
    assert!(
        out.contains(&outside("passwordFile", pass.to_str().unwrap())),
        "{out}"
    );
    assert!(!out.contains("pw-5d1c"), "{out}");
    // The same answer where nothing exists.
    std::fs::remove_file(&pass).unwrap();
    let gone = stdout(&proxy(&["check", file]));
    assert_eq!(gone, out);
    std::fs::write(&pass, "pw-5d1c\n").unwrap();

    let (c, s) = (config_dir.to_str().unwrap(), secret.to_str().unwrap());
    let o = proxy(&["check", "--file-root", c, "--file-root", s, file]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = Command::new(env!("CARGO_BIN_EXE_sluice-proxy"))
        .args(["check", file])
        .env("SLUICE_FILE_ROOTS", format!("{c},{s}"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}
