//! A broker that really requires SASL: tansu 0.6.0 built with SQLite
//! storage (`scripts/install-test-deps` builds it into the cache; the
//! prebuilt tansu keeps nothing across a restart), started once without
//! authentication to create a SCRAM-SHA-512 user and the topics, then
//! restarted on the same database with `--authentication`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use sluice_testkit::ports::port;
use sluice_testkit::process::Proc;

/// The SCRAM user every [`ScramTansu`] has.
pub const USER: &str = "sluice-client";
/// Its password.
pub const PASSWORD: &str = "client-secret-5d1c";
/// The mechanism tansu's users have.
pub const MECHANISM: &str = "SCRAM-SHA-512";

/// The tansu with SQLite storage: `$SLUICE_TANSU_SQL`, else the path the
/// install script builds it at.
pub fn binary() -> PathBuf {
    let path = std::env::var_os("SLUICE_TANSU_SQL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("SLUICE_CACHE").map_or_else(
                || {
                    PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
                        .join(".cache/sluice")
                },
                PathBuf::from,
            );
            cache.join("tansu-sql-0.6.0/bin/tansu")
        });
    assert!(
        path.is_file(),
        "{} is missing: run scripts/install-test-deps",
        path.display()
    );
    path
}

/// A single-node tansu that requires SCRAM-SHA-512 (node id 111), users
/// [`USER`] and any given to [`ScramTansu::start`].
#[derive(Debug)]
pub struct ScramTansu {
    /// `127.0.0.1:port`, where clients connect.
    pub addr: String,
    proc: Proc,
    _dir: tempfile::TempDir,
}

impl ScramTansu {
    /// Starts it with `users` (name, password, `SCRAM-SHA-512` or
    /// `SCRAM-SHA-256`) besides [`USER`] and `topics` (name, partitions),
    /// advertising `advertised` when given (a TLS terminator in front of it).
    pub fn start(
        users: &[(&str, &str, &str)],
        topics: &[(&str, u32)],
        advertised: Option<&str>,
    ) -> ScramTansu {
        let dir = tempfile::tempdir().expect("tempdir");
        let addr = format!("127.0.0.1:{}", port());
        let broker = format!("tcp://{addr}");
        let mut open = Self::broker(&dir, &addr, advertised, false);
        for (name, password, mechanism) in [(USER, PASSWORD, MECHANISM)].iter().chain(users) {
            let mechanism = mechanism.replace("SCRAM-SHA-", "scram");
            let args = ["user", "create", name, password, "--broker", &broker];
            tansu(&dir, &[&args[..], &["--mechanism", &mechanism]].concat());
        }
        for (topic, partitions) in topics {
            let partitions = partitions.to_string();
            let args = ["topic", "create", topic, "--broker", &broker];
            tansu(&dir, &[&args[..], &["--partitions", &partitions]].concat());
        }
        open.stop("TERM", Duration::from_secs(20));
        let proc = Self::broker(&dir, &addr, advertised, true);
        ScramTansu {
            addr,
            proc,
            _dir: dir,
        }
    }

    fn broker(
        dir: &tempfile::TempDir,
        addr: &str,
        advertised: Option<&str>,
        authentication: bool,
    ) -> Proc {
        let listen = format!("tcp://{addr}");
        let advertised = advertised.map_or_else(|| listen.clone(), |a| format!("tcp://{a}"));
        let mut cmd = Command::new(binary());
        cmd.current_dir(dir.path());
        cmd.args(["broker", "--listener-url", &listen]);
        cmd.args(["--advertised-listener-url", &advertised]);
        cmd.args(["--storage-engine", "sqlite://tansu.db"]);
        if authentication {
            cmd.arg("--authentication");
        }
        let mut proc = Proc::spawn("tansu-sql", cmd);
        // tansu exits 0 when its port is taken, so readiness is its own line.
        proc.wait_for_line("ready in", Duration::from_secs(30));
        proc
    }

    /// The broker's PID.
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }
}

fn tansu(dir: &tempfile::TempDir, args: &[&str]) {
    let out = Command::new(binary())
        .current_dir(dir.path())
        .args(args)
        .output()
        .expect("run tansu");
    assert!(
        out.status.success(),
        "tansu {}: {}",
        args.first().copied().unwrap_or_default(),
        String::from_utf8_lossy(&out.stderr)
    );
}
