//! Test hosts in network namespaces of the test's own, for tests that need
//! several "pods" with the same ports (each its own address, its own
//! loopback). Everything lives inside namespaces this module makes: a hub
//! namespace holding the bridge (and the broker and the test driver's
//! sockets), and one namespace per pod joined to it by a veth pair. Nothing
//! is added to the machine's root namespace; addresses are from
//! 198.18.0.0/24 (RFC 2544 benchmarking range), which exists only inside
//! these namespaces. Dropping the [`Net`] deletes every namespace (and with
//! them their links).

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The hub's address (the broker and the driver live there).
pub const HUB: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);

/// A set of namespaces: a hub with a bridge, and `pods` pods.
#[derive(Debug)]
pub struct Net {
    prefix: String,
    pods: usize,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Net {
    /// Makes the hub and `pods` pod namespaces, named after this process
    /// and this set's number in it (`sl<pid>ah`, `sl<pid>ap0`, ...) so that
    /// parallel test processes, and parallel tests in one process, never
    /// collide, and removes any left over by an earlier run of the same pid.
    pub fn new(pods: usize) -> Net {
        static SETS: AtomicUsize = AtomicUsize::new(0);
        let n = SETS.fetch_add(1, Ordering::Relaxed) % 26;
        let letter = char::from(b'a' + u8::try_from(n).expect("below 26"));
        let prefix = format!("sl{}{letter}", std::process::id());
        let net = Net { prefix, pods };
        net.remove();
        let hub = net.hub();
        ip(&["netns", "add", &hub]);
        net.exec_ip(&hub, &["link", "set", "lo", "up"]);
        net.exec_ip(&hub, &["link", "add", "br0", "type", "bridge"]);
        net.exec_ip(&hub, &["addr", "add", &format!("{HUB}/24"), "dev", "br0"]);
        net.exec_ip(&hub, &["link", "set", "br0", "up"]);
        for i in 0..pods {
            let pod = net.pod(i);
            ip(&["netns", "add", &pod]);
            net.exec_ip(&pod, &["link", "set", "lo", "up"]);
            // The veth pair is made inside the pod's namespace, its other end
            // moved straight into the hub's: neither end ever sits in the root.
            let (inner, outer) = ("eth0", format!("{}v{i}", net.prefix));
            net.exec_ip(
                &pod,
                &[
                    "link", "add", inner, "type", "veth", "peer", "name", &outer, "netns", &hub,
                ],
            );
            net.exec_ip(
                &pod,
                &[
                    "addr",
                    "add",
                    &format!("{}/24", Self::pod_addr(i)),
                    "dev",
                    inner,
                ],
            );
            net.exec_ip(&pod, &["link", "set", inner, "up"]);
            net.exec_ip(&hub, &["link", "set", &outer, "master", "br0"]);
            net.exec_ip(&hub, &["link", "set", &outer, "up"]);
        }
        net
    }

    /// The hub namespace's name.
    pub fn hub(&self) -> String {
        format!("{}h", self.prefix)
    }

    /// Pod `i`'s namespace name.
    pub fn pod(&self, i: usize) -> String {
        format!("{}p{i}", self.prefix)
    }

    /// Pod `i`'s address.
    pub fn pod_addr(i: usize) -> Ipv4Addr {
        Ipv4Addr::new(
            198,
            18,
            0,
            10 + u8::try_from(i).expect("fewer than 245 pods"),
        )
    }

    /// A command that runs `program` inside namespace `ns`; its PID is the
    /// program's own (`ip netns exec` execs it).
    pub fn command(&self, ns: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]).arg(program);
        cmd
    }

    /// Runs `ip ARGS` inside namespace `ns` (one of this set's), panicking
    /// with its error if it fails: an address or a route a test adds.
    pub fn ip(&self, ns: &str, args: &[&str]) {
        assert!(
            ns == self.hub() || (0..self.pods).any(|i| self.pod(i) == ns),
            "{ns} is not a namespace of this set"
        );
        self.exec_ip(ns, args);
    }

    fn exec_ip(&self, ns: &str, args: &[&str]) {
        let mut all = vec!["netns", "exec", ns, "ip"];
        all.extend_from_slice(args);
        ip(&all);
    }

    /// GETs `url` from inside namespace `ns` (with curl, which runs there),
    /// returning the body; `None` when the peer does not answer in time.
    pub fn get(&self, ns: &str, url: &str, timeout: Duration) -> Option<String> {
        let out = self
            .command(ns, "curl")
            .args(["-sS", "--fail-with-body", "-m"])
            .arg(format!("{:.3}", timeout.as_secs_f64()))
            .arg(url)
            .output()
            .expect("run curl");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn remove(&self) {
        for ns in std::iter::once(self.hub()).chain((0..self.pods).map(|i| self.pod(i))) {
            let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.remove();
    }
}
