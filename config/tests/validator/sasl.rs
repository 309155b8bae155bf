//! `upstream.sasl` and `upstream.nodes`: what they hold once valid, how a
//! change shows in a diff, PLAIN refused without TLS, and that the
//! credentials appear in no error, diff, warning or debug output.

use sluice_config::sasl::SaslMechanism;
use sluice_config::{MemoryFiles, PathsOnly, ProxyConfig, diff, validate, validate_referenced};

const PASSWORD: &str = "s3cret-pw-for-tests";

fn yaml(upstream_extra: &str) -> String {
    format!(
        "virtualClusters:\n  - name: orders\n    upstream:\n      bootstrapServers: [kafka:9092]\n{upstream_extra}    gateway:\n      advertisedHost: proxy.local\n      bootstrapPort: 19092\n      brokerPorts: {{ start: 19093, count: 3 }}\n"
    )
}

const SASL: &str =
    "      sasl: { mechanism: SCRAM-SHA-256, usernameFile: user, passwordFile: pass }\n";

fn files(password: &str) -> MemoryFiles {
    MemoryFiles::default()
        .with("user", b"proxy\n".to_vec())
        .with("pass", format!("{password}\r\n").into_bytes())
}

fn parse(text: &str, files: &MemoryFiles) -> ProxyConfig {
    let valid = validate(text.as_bytes(), files).unwrap_or_else(|e| panic!("{e:?}"));
    (*valid.config).clone()
}

#[test]
fn credentials_are_read_one_line_each_and_never_shown() {
    let config = parse(&yaml(SASL), &files(PASSWORD));
    let sasl = config.virtual_clusters[0].upstream.sasl.as_ref().unwrap();
    assert_eq!(sasl.mechanism, SaslMechanism::ScramSha256);
    let credentials = sasl.credentials.0.as_ref().as_ref().unwrap();
    assert_eq!(credentials.username, "proxy");
    assert_eq!(credentials.password, PASSWORD);
    let debug = format!("{config:?}");
    assert!(!debug.contains(PASSWORD), "{debug}");
    assert!(!debug.contains(&sasl.password_file.digest), "{debug}");
}

#[test]
fn the_files_are_part_of_the_effective_version_and_rotate_in_place() {
    let text = yaml(SASL);
    let (one, referenced) = validate_referenced(text.as_bytes(), &files(PASSWORD));
    assert_eq!(referenced.files, ["user", "pass"]);
    let (two, rotated) = validate_referenced(text.as_bytes(), &files("another-one"));
    assert_ne!(referenced.effective_version, rotated.effective_version);
    let d = diff(&one.unwrap().config, &two.unwrap().config);
    assert!(d.modified.is_empty(), "{d:?}");
    assert_eq!(d.rotated.len(), 1, "{d:?}");
    assert_eq!(
        d.rotated[0].reasons,
        ["upstream.sasl.passwordFile content changed"]
    );
    let shown = format!("{d:?}");
    assert!(!shown.contains(PASSWORD) && !shown.contains("another-one"));
}

#[test]
fn mechanism_and_node_changes_start_a_new_generation() {
    let plain = format!(
        "      tls: {{}}\n{}",
        SASL.replace("SCRAM-SHA-256", "PLAIN")
    );
    let nodes = "      nodes: [{ id: 0, address: \"kafka-0:9092\" }]\n";
    let f = files(PASSWORD);
    let d = diff(
        &parse(&yaml(SASL), &f),
        &parse(&yaml(&format!("{plain}{nodes}")), &f),
    );
    assert_eq!(d.modified.len(), 1, "{d:?}");
    assert_eq!(
        d.modified[0].reasons,
        [
            "upstream.tls added",
            "upstream.sasl.mechanism changed from SCRAM-SHA-256 to PLAIN",
            "upstream.nodes changed"
        ]
    );
    let d = diff(&parse(&yaml(""), &f), &parse(&yaml(SASL), &f));
    assert_eq!(d.modified[0].reasons, ["upstream.sasl added"]);
}

#[test]
fn plain_without_upstream_tls_is_refused() {
    let plain = SASL.replace("SCRAM-SHA-256", "PLAIN");
    let f = files(PASSWORD);
    for source in [&f as &dyn sluice_config::FileSource, &PathsOnly] {
        let errors = validate(yaml(&plain).as_bytes(), source).unwrap_err();
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "5:26: virtualClusters[0].upstream.sasl.mechanism: PLAIN sends the password in clear text: it needs upstream.tls (or use SCRAM-SHA-256 or SCRAM-SHA-512)"
            ]
        );
    }
    let with_tls = format!("      tls: {{}}\n{plain}");
    let config = parse(&yaml(&with_tls), &f);
    let sasl = config.virtual_clusters[0].upstream.sasl.as_ref().unwrap();
    assert_eq!(sasl.mechanism, SaslMechanism::Plain);
}

#[test]
fn a_bad_secret_file_is_named_without_its_content() {
    let f = MemoryFiles::default()
        .with("user", b"proxy".to_vec())
        .with("pass", format!("{PASSWORD}\nsecond line\n").into_bytes());
    let errors = validate(yaml(SASL).as_bytes(), &f).unwrap_err();
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "5:75: virtualClusters[0].upstream.sasl.passwordFile: \"pass\" must hold the password on one line of UTF-8 text"
        ]
    );
}

#[test]
fn without_files_the_paths_are_checked_and_nothing_is_read() {
    let config = parse_paths_only(&yaml(SASL));
    let sasl = config.virtual_clusters[0].upstream.sasl.as_ref().unwrap();
    assert!(sasl.credentials.0.is_none());
}

fn parse_paths_only(text: &str) -> ProxyConfig {
    let valid = validate(text.as_bytes(), &PathsOnly).unwrap_or_else(|e| panic!("{e:?}"));
    (*valid.config).clone()
}
