//! The command line: defaults, requirements between flags, durations.

use super::*;

#[test]
fn defaults_check_paths_only() {
    let args = Args::try_parse_from(["sluice-webhook", "--tls-cert", "c", "--tls-key", "k"])
        .expect("parses");
    let o = args.options().expect("valid");
    assert_eq!(o.listen, "0.0.0.0:8443".parse().unwrap());
    assert_eq!(o.config_key, "proxy.yaml");
    assert_eq!(o.max_errors, 20);
    assert!(matches!(o.files, FileCheck::PathsOnly));
}

#[test]
fn files_root_needs_check_files() {
    let base = ["sluice-webhook", "--tls-cert", "c", "--tls-key", "k"];
    let without = base.iter().chain(&["--files-root", "/etc"]);
    assert!(Args::try_parse_from(without).is_err());
    let with = base
        .iter()
        .chain(&["--check-files", "--files-root", "/etc"]);
    let o = Args::try_parse_from(with)
        .expect("parses")
        .options()
        .expect("valid");
    let etc = FileRoots::new(["/etc"]).unwrap();
    assert_eq!(
        o.files,
        FileCheck::Local {
            root: "/etc".into(),
            roots: etc
        }
    );
    // No default root: reading files needs one named.
    let only = base.iter().chain(&["--check-files"]);
    assert!(Args::try_parse_from(only).is_err());
    let roots = base.iter().chain(&[
        "--check-files",
        "--files-root",
        "/etc/sluice",
        "--file-root",
        "/etc/sluice,/etc/sluice-tls",
    ]);
    let o = Args::try_parse_from(roots)
        .expect("parses")
        .options()
        .expect("valid");
    assert_eq!(
        o.files,
        FileCheck::Local {
            root: "/etc/sluice".into(),
            roots: FileRoots::new(["/etc/sluice", "/etc/sluice-tls"]).unwrap()
        }
    );
}

#[test]
fn durations_use_the_shared_parser() {
    let base = ["sluice-webhook", "--tls-cert", "c", "--tls-key", "k"];
    let args = base
        .iter()
        .chain(&["--read-timeout", "500ms", "--shutdown-grace", "0"]);
    let o = Args::try_parse_from(args)
        .expect("parses")
        .options()
        .expect("valid");
    assert_eq!(o.read_timeout, Duration::from_millis(500));
    assert_eq!(o.shutdown_grace, Duration::ZERO);
    for bad in [
        ["--read-timeout", "0s"],
        ["--read-timeout", "99999999999h"],
        ["--shutdown-grace", "1m30s"],
    ] {
        let e = Args::try_parse_from(base.iter().chain(&bad)).expect_err(bad[1]);
        assert_eq!(e.exit_code(), 2, "{bad:?}");
    }
}

const SELF_SIGNED: [&str; 6] = [
    "sluice-webhook",
    "--self-signed",
    "--secret=sluice-system/sluice-webhook-tls",
    "--webhook-configuration=sluice-webhook",
    "--cert-hosts=a.svc,127.0.0.1",
    "--cert-lifetime=10s",
];

#[test]
fn self_signed_names_its_objects_and_lifetimes() {
    let o = Args::try_parse_from(SELF_SIGNED).expect("parses").options();
    let Certificate::SelfSigned(s) = o.expect("valid").certificate else {
        panic!("not self-signed");
    };
    assert_eq!(s.secret_name(), "sluice-system/sluice-webhook-tls");
    assert_eq!(s.configuration, "sluice-webhook");
    assert_eq!(s.hosts, ["a.svc", "127.0.0.1"]);
    assert_eq!(s.lifetimes.serving(), Duration::from_secs(10));
    assert_eq!(s.lifetimes.ca(), Duration::from_secs(3650 * 86_400));
    let defaults = Args::try_parse_from(&SELF_SIGNED[..5]).expect("parses");
    assert_eq!(defaults.cert_lifetime, Duration::from_secs(90 * 86_400));
}

#[test]
fn self_signed_refuses_what_does_not_go_together() {
    let parse = |extra: &[&str]| Args::try_parse_from(SELF_SIGNED.iter().chain(extra));
    // Files and --self-signed exclude each other.
    assert!(parse(&["--tls-cert", "c"]).is_err());
    // Neither files nor --self-signed.
    assert!(Args::try_parse_from(["sluice-webhook"]).is_err());
    // --self-signed without the objects it looks after.
    assert!(Args::try_parse_from(&SELF_SIGNED[..3]).is_err());
    let e = Args::try_parse_from(["sluice-webhook", "--self-signed", "--secret=no-namespace"])
        .expect_err("not NAMESPACE/NAME");
    assert!(e.to_string().contains("is not NAMESPACE/NAME"), "{e}");
    // Valid lifetimes that do not go together: exit status 2, a clear message.
    let e = parse(&["--ca-lifetime=20s"])
        .expect("parses")
        .options()
        .expect_err("CA too short");
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains("the CA's lifetime must be at least three times"),
        "{e}"
    );
    assert!(parse(&["--cert-lifetime=48h"]).is_err());
    let e = parse(&["--cert-hosts=a.svc,"]).expect("parses").options();
    assert!(
        e.expect_err("an empty host")
            .to_string()
            .contains("--cert-hosts")
    );
    // The self-signed flags need --self-signed.
    let files = ["sluice-webhook", "--tls-cert", "c", "--tls-key", "k"];
    assert!(Args::try_parse_from(files.iter().chain(&["--secret=a/b"])).is_err());
}
