//! The proxy's benchmark clusters beyond plain and TLS: the filtered
//! cluster's filters, and the identity clusters (mTLS, mTLS with a
//! principal-keyed policy, SCRAM over TLS).

use std::process::{Command, Stdio};

/// The filtered cluster's filters: a topic policy that must look at every
/// request's topics (a deny rule, then an allow rule over the benchmark's
/// topics, default deny: a policy that allowed everything outright would
/// never be consulted) and allows all the benchmark does, and a quota of
/// 100 GB/s each way per cluster and per client id, metered and never
/// reached.
pub(super) const FILTERS: &str = "    filters:
      - type: topic-policy
        config:
          default: deny
          rules:
            - { deny: [all], topics: [\"private-*\"] }
            - { allow: [all], topics: [\"bench-*\"] }
      - type: quota
        config:
          produceBytesPerSecond: 100000000000
          fetchBytesPerSecond: 100000000000
          perClientId: { produceBytesPerSecond: 100000000000, fetchBytesPerSecond: 100000000000 }
          connectionsPerSecond: 100000
";

/// The SCRAM path's user.
pub(crate) const SCRAM_USER: [&str; 2] = ["bench", "bench-pw"];

/// The identity clusters' gateway TLS (`{cert}`, `{key}`, `{ca}` filled)
/// and `authentication`: the client certificate's subject is its
/// principal.
pub(super) const MTLS: &str =
    "      tls: { certFile: \"{cert}\", keyFile: \"{key}\", clientCaFile: \"{ca}\" }
    authentication:
      mtls: { principals: [{ from: subject }] }
      required: true
";

/// A topic policy keyed on the benchmark client's principal that judges
/// every request (a deny rule first, default deny) and allows all it does.
pub(super) const BY_PRINCIPAL: &str = "    filters:
      - type: topic-policy
        config:
          default: deny
          rules:
            - { deny: [all], topics: [\"private-*\"] }
            - { allow: [all], topics: [\"bench-*\"], principals: [\"CN=client*\"] }
";

/// The SCRAM cluster's gateway `tls` and `authentication`: its
/// credentials file (written in `dir` by `sluice-proxy scram-credential`)
/// holds [`SCRAM_USER`].
pub(super) fn scram_cluster(dir: &std::path::Path, tls: &str) -> String {
    use std::io::Write;
    let [user, password] = SCRAM_USER;
    let mut child = Command::new(sluice_testkit::bin("sluice-proxy"))
        .args([
            "scram-credential",
            "--user",
            user,
            "--mechanism",
            "SCRAM-SHA-512",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run sluice-proxy scram-credential");
    let mut stdin = child.stdin.take().expect("its stdin");
    writeln!(stdin, "{password}").expect("write the password");
    drop(stdin);
    let out = child.wait_with_output().expect("its credential line");
    assert!(out.status.success(), "scram-credential: {out:?}");
    let file = dir.join("users.scram");
    std::fs::write(&file, out.stdout).expect("write the credentials file");
    format!(
        "{tls}    authentication:\n      sasl: {{ mechanisms: [SCRAM-SHA-512], credentialsFile: \"{}\" }}\n      required: true\n",
        file.display()
    )
}

/// The tenant cluster's `tenancy`: the default prefix, `bench-tenant.`.
pub(crate) const TENANT: &str = "    tenancy: {}\n";
