//! Referenced files confined to the roots the operator sets (issue 30,
//! finding 2), against the real proxy: a configuration naming a file
//! outside them (an absolute path, a `..` escape) is rejected by validate
//! and by reload before anything is read, so the reload's upstream check
//! never carries such a file's content to a broker the configuration names.
//! Before, both were read and the check sent them to the broker.

use std::io::ErrorKind;
use std::net::TcpListener;

use sluice_admin_api::ConfigInvalid;
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::{Options, Proxy};

/// What the file outside the roots holds.
const SECRET: &str = "outside-pw-3f9a1c";

/// One cluster whose upstream is `broker`, with `sasl` (indented YAML) on
/// line 7.
fn config(port: u16, broker: &str, sasl: &str) -> String {
    format!(
        "admin: {{ listen: \"{{admin}}\" }}\nvirtualClusters:\n  - name: orders\n    upstream:\n      bootstrapServers: [\"{broker}\"]\n      checkTimeout: 2s\n{sasl}    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n",
        port + 1
    )
}

fn sasl(username: &str, password: &str) -> String {
    format!(
        "      sasl: {{ mechanism: SCRAM-SHA-512, usernameFile: {username}, passwordFile: {password} }}\n"
    )
}

fn credentials(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("username"), "proxy\n").unwrap();
    std::fs::write(dir.join("password"), format!("{SECRET}\n")).unwrap();
}

#[test]
fn a_file_outside_the_roots_is_refused_before_the_upstream_check_can_send_it() {
    let outside = tempfile::tempdir().unwrap();
    credentials(outside.path());
    // A broker whoever edits the configuration controls.
    let broker = TcpListener::bind("127.0.0.1:0").unwrap();
    broker.set_nonblocking(true).unwrap();
    let broker_addr = broker.local_addr().unwrap().to_string();
    let port = ports(2);
    // The proxy's default root: the configuration's directory.
    let options = Options {
        file_roots: Some(Vec::new()),
        ..Options::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = Proxy::launch(dir, &config(port, "127.0.0.1:9", ""), &options);

    let absolute = outside.path().join("username").display().to_string();
    let escape = format!(
        "../{}/password",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    let bad = config(port, &broker_addr, &sasl(&absolute, &escape));
    let answer = proxy.validate(&bad);
    assert_eq!(answer.status, 400, "{}", answer.body);
    let invalid: ConfigInvalid = answer.parse();
    let shown: Vec<(Option<u32>, String)> = invalid
        .errors
        .iter()
        .map(|e| (e.line, format!("{}: {}", e.path, e.message)))
        .collect();
    let outside_roots = |field: &str, path: &str| {
        (
            Some(7),
            format!(
                "virtualClusters[0].upstream.sasl.{field}: cannot read \"{path}\": outside the allowed file roots"
            ),
        )
    };
    assert_eq!(
        shown,
        [
            outside_roots("usernameFile", &absolute),
            outside_roots("passwordFile", &escape)
        ]
    );
    let reload = proxy.reload(&bad);
    assert_eq!(reload.status, 400, "{}", reload.body);
    assert!(reload.body.contains("outside the allowed file roots"));
    for body in [&answer.body, &reload.body] {
        assert!(!body.contains(SECRET), "{body}");
    }
    // The proxy never connected to the broker.
    assert!(
        matches!(broker.accept(), Err(e) if e.kind() == ErrorKind::WouldBlock),
        "the upstream check reached the broker"
    );

    // The control: the same files beneath the root are read, and the
    // check does go to the broker (which never answers: the reload fails).
    credentials(&proxy.dir().join("secret"));
    let good = config(
        port,
        &broker_addr,
        &sasl("secret/username", "secret/password"),
    );
    proxy.allow("upstream");
    proxy.allow("reload");
    let reload = proxy.reload(&good);
    assert_eq!(reload.status, 500, "{}", reload.body);
    broker.set_nonblocking(false).unwrap();
    assert!(broker.accept().is_ok(), "the check connected");
    proxy.assert_clean_logs();
}
