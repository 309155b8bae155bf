//! haproxy, the baseline: Debian's build in TCP mode with its defaults, one
//! frontend per broker (plain, or terminating TLS).

use std::process::Command;

use sluice_testkit::certs::Pki;
use sluice_testkit::process::Proc;

use crate::rig::{open_file_limit, wait_listening};

/// One haproxy frontend and the broker behind it.
pub(crate) struct Frontend {
    listen: String,
    backend: String,
    /// The certificate and key (one PEM file) when it terminates TLS.
    pem: Option<std::path::PathBuf>,
}

impl Frontend {
    /// A TCP pass-through.
    pub(crate) fn plain(listen: &str, backend: &str) -> Frontend {
        Frontend {
            listen: listen.to_owned(),
            backend: backend.to_owned(),
            pem: None,
        }
    }

    /// TLS from clients with the server certificate of `pki`, plaintext on.
    pub(crate) fn tls(listen: &str, backend: &str, pki: &Pki) -> Frontend {
        let pem = pki.server_cert.with_file_name("haproxy.pem");
        let read = |p: &std::path::Path| std::fs::read_to_string(p).expect("read certificate");
        std::fs::write(&pem, read(&pki.server_cert) + &read(&pki.server_key))
            .expect("write haproxy.pem");
        Frontend {
            pem: Some(pem),
            ..Frontend::plain(listen, backend)
        }
    }
}

/// A running haproxy and its configuration's directory.
pub(crate) struct Haproxy {
    proc: Proc,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// Its PID.
    pub(crate) fn pid(&self) -> u32 {
        self.proc.pid()
    }
}

/// haproxy in front of brokers, one frontend each, ready to serve.
pub(crate) fn start_haproxy(frontends: &[Frontend]) -> Haproxy {
    let dir = tempfile::tempdir().expect("haproxy dir");
    let cfg = dir.path().join("haproxy.cfg");
    // Debian's haproxy with its defaults for a TCP pass-through: one thread
    // per CPU, 16 KiB buffers, no logging; room for as many connections as
    // the open-file limit allows (two sockets each), for the memory benchmark.
    let maxconn = open_file_limit().saturating_sub(200) / 2;
    let mut text = format!(
        "global\n  maxconn {maxconn}\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 120s\n  timeout server 120s\n"
    );
    for (i, f) in frontends.iter().enumerate() {
        let ssl = f
            .pem
            .as_ref()
            .map(|p| format!(" ssl crt {}", p.display()))
            .unwrap_or_default();
        text.push_str(&format!(
            "frontend f{i}\n  bind {}{ssl}\n  default_backend b{i}\nbackend b{i}\n  server s{i} {}\n",
            f.listen, f.backend
        ));
    }
    std::fs::write(&cfg, text).expect("write haproxy.cfg");
    let mut cmd = Command::new("haproxy");
    cmd.arg("-db").arg("-f").arg(&cfg);
    let proc = Proc::spawn("haproxy", cmd);
    for f in frontends {
        wait_listening(&f.listen, "haproxy");
    }
    Haproxy { proc, _dir: dir }
}
