//! Where each benchmark path goes: its bootstrap, its clients' flags, its
//! broker, the process in its middle, and its topics.

use std::process::Command;

use serde_json::Value;
use sluice_tests::peers::Tansu;
use sluice_tests::python;

use super::{LOAD_TIMEOUT, Path, Rig, SCRAM_USER, checked};

/// The tenant cluster's prefix (`tenancy: {}` of cluster `bench-tenant`).
pub(super) const TENANT_PREFIX: &str = "bench-tenant.";

impl Rig {
    /// Where a client on `path` bootstraps.
    pub(crate) fn bootstrap(&self, path: Path) -> &str {
        match path {
            Path::Direct => &self.d.addr,
            Path::Sluice => &self.proxy_bootstrap,
            Path::Haproxy => &self.haproxy_addr,
            Path::SluiceTls => &self.proxy_tls_bootstrap,
            Path::HaproxyTls => &self.haproxy_tls_addr,
            Path::SluiceSni => &self.proxy_sni_bootstrap,
            Path::SluiceFiltered => &self.proxy_filtered_bootstrap,
            Path::SluiceMtls => &self.proxy_identity_bootstrap[0],
            Path::SluiceMtlsPolicy => &self.proxy_identity_bootstrap[1],
            Path::SluiceScram => &self.proxy_identity_bootstrap[2],
            Path::SluiceTenant => &self.proxy_tenant_bootstrap,
        }
    }

    /// What a load client on `path` adds to its arguments.
    pub(crate) fn client_flags(&self, path: Path) -> Vec<String> {
        match path {
            Path::SluiceSni => vec!["--ssl".into(), self.sni_ca.display().to_string()],
            _ if path.tls() => {
                let mut flags = vec!["--ssl".into(), self.pki.ca.display().to_string()];
                let [user, password] = SCRAM_USER;
                match path {
                    Path::SluiceMtls | Path::SluiceMtlsPolicy => {
                        let (crt, key) = (&self.pki.client_cert, &self.pki.client_key);
                        flags.extend(["--cert".into(), crt.display().to_string()]);
                        flags.push(key.display().to_string());
                    }
                    Path::SluiceScram => {
                        flags.extend(["--sasl", "SCRAM-SHA-512", user, password].map(String::from));
                    }
                    _ => {}
                }
                flags
            }
            _ => Vec::new(),
        }
    }

    /// Runs `bench_load.py` on `path` to its end and returns its report;
    /// on the SNI path it resolves names through the rig's hosts file.
    pub(crate) fn load(&self, path: Path, args: &[&str]) -> Value {
        let mut cmd = match path {
            Path::SluiceSni => self.hosts.python("bench_load.py"),
            _ => python::command("bench_load.py"),
        };
        cmd.args(args);
        checked(python::run_json_command(cmd, LOAD_TIMEOUT), args)
    }

    /// The broker behind `path`.
    pub(crate) fn broker(&self, path: Path) -> &Tansu {
        match path {
            Path::Direct => &self.d,
            Path::Sluice
            | Path::SluiceTls
            | Path::SluiceSni
            | Path::SluiceFiltered
            | Path::SluiceMtls
            | Path::SluiceMtlsPolicy
            | Path::SluiceScram
            | Path::SluiceTenant => &self.a,
            Path::Haproxy => &self.b,
            Path::HaproxyTls => &self.c,
        }
    }

    /// The process in the middle of `path`, if any.
    pub(crate) fn middle(&self, path: Path) -> Option<u32> {
        match path {
            Path::Direct => None,
            Path::Haproxy | Path::HaproxyTls => Some(self.haproxy.pid()),
            _ => Some(self.proxy.pid()),
        }
    }

    /// A new single-partition topic on the broker behind `path`.
    pub(crate) fn topic(&mut self, path: Path) -> String {
        self.topics += 1;
        let name = format!("bench-{}", self.topics);
        self.broker(path).create_topic(&upstream(path, &name), 1);
        name
    }

    /// Deletes a topic, so the in-memory broker does not grow run after run.
    pub(crate) fn drop_topic(&self, path: Path, name: &str) {
        let out = Command::new("tansu")
            .args(["topic", "delete", &upstream(path, name), "--broker"])
            .arg(format!("tcp://{}", self.broker(path).addr))
            .output()
            .expect("run tansu topic delete");
        assert!(out.status.success(), "tansu topic delete {name}");
    }
}

/// A topic's name on the broker: a tenant's has its prefix.
fn upstream(path: Path, name: &str) -> String {
    match path {
        Path::SluiceTenant => format!("{TENANT_PREFIX}{name}"),
        _ => name.to_owned(),
    }
}
