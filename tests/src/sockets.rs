//! Who is connected to whom, from the kernel's socket table (`ss`): the
//! address-level proof that clients only ever talk to the proxy.

use std::process::Command;

/// An established TCP connection and the process owning it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conn {
    /// Local port.
    pub local: u16,
    /// Peer port.
    pub peer: u16,
    /// Owning process.
    pub pid: u32,
}

/// Every established TCP connection with a known owner.
pub fn established() -> Vec<Conn> {
    let out = Command::new("ss")
        .args(["-tnpH", "state", "established"])
        .output()
        .expect("run ss");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let port = |s: &str| s.rsplit(':').next()?.parse::<u16>().ok();
            // With a state filter, ss prints: Recv-Q Send-Q Local Peer Process
            let local = port(cols.get(2)?)?;
            let peer = port(cols.get(3)?)?;
            let pid = l.split("pid=").nth(1)?.split(',').next()?.parse().ok()?;
            Some(Conn { local, peer, pid })
        })
        .collect()
}

/// PIDs of the processes connected to `port`.
pub fn owners_of_connections_to(port: u16) -> Vec<u32> {
    established()
        .into_iter()
        .filter(|c| c.peer == port)
        .map(|c| c.pid)
        .collect()
}

/// Peer ports of the connections process `pid` holds.
pub fn peers_of(pid: u32) -> Vec<u16> {
    established()
        .into_iter()
        .filter(|c| c.pid == pid)
        .map(|c| c.peer)
        .collect()
}
